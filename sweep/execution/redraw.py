"""Random attention matrices drawn afresh every tau time units (`model.redraw_every: tau`).

The run is cut into segments of tau (a whole number of saves); segment k integrates with its
own draw of the random qk / v (segment 0: the job's usual draw) and its own noise stream,
both seeded from the job's seed and k alone, so a job's bits do not depend on shards,
workers or resumes, and a tau of t_max or more is the run without redraws, bit for bit. The
save at a segment's end is observed under the matrices that led to it; the next segment
starts from those positions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sweep.kernels.codes import OK
from sweep.kernels.general.drive import integrate


def saves_per_segment(model, integ) -> int:
    """The save intervals of one segment (config.rules checks tau is a whole number)."""
    return int(round(model.redraw_every / integ.save_every))


def integrate_segments(x, dynamics_of: Callable[[int], object], per: int, method, dt,
                       save_stride, eps, obs, traj, stop):
    """integrate() over segments of `per` saves, segment k with dynamics_of(k); x, obs, traj
    and the return value (status, saves recorded) as integrate's."""
    total, done, k = obs.shape[0], 0, 0
    while True:
        end = min(done + per, total - 1)
        part = np.full((end - done + 1, obs.shape[1]), np.nan)
        kept = np.full((end - done + 1 if traj.shape[0] else 0,) + traj.shape[1:], np.nan,
                       dtype=traj.dtype)
        status, saves = integrate(x, dynamics_of(k), method, dt, save_stride, eps, part,
                                  kept, stop)
        first = 0 if k == 0 else 1  # row 0 re-observes the last save under the new draw
        obs[done + first:end + 1] = part[first:]
        if traj.shape[0]:
            traj[done + first:end + 1] = kept[first:]
        if status != OK or end == total - 1:
            return status, done + saves - first
        done, k = end, k + 1
