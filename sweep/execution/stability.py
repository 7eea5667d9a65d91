"""Step sizes and overflow limits: which jobs will be inaccurate or blow up, and why.

Near consensus every token relaxes toward the mean position: dx_i/dt ~ r (xbar - x_i) with
r = 1 under softmax (SA) and r = e^beta under unnormalized attention (USA), so that
1 - <x_i, x_j> decays at rate 2 r (docs/theory.md, "Integration"). An explicit method with step dt
is stable on that decay only if dt r stays inside its stability interval: 2 for Euler, 2.785
for classical RK4. So the stable step is 2 / r (Euler) or 2.785 / r (RK4); a larger one
oscillates or wanders instead of converging. `dt` is never rescaled: a too-large step is
reported, with the step that would be stable.
The layer step x <- normalize(x + dt v) is stable for every dt: near consensus <x_i, v_i> ~ r
too, so a deviation from the mean is divided by 1 + dt r each step (backward Euler's factor,
in (0, 1)). What it loses is time: each step advances the flow by dt / (1 + dt r), not dt
(docs/integrators.md), so for dt r >= 1 its times near consensus run 2x slow or more, which
is reported the same way.
"""

from __future__ import annotations

import math

import numpy as np

from sweep.config.grid import kinds
from sweep.kernels.codes import STABILITY_INTERVAL


def relaxation_rate(attention: str, beta: float) -> float:
    """The linear rate of x_i -> xbar near consensus: 1 (SA) or e^beta (USA); inf on overflow."""
    if attention == "unnormalized":
        return math.exp(beta) if beta < 709.0 else math.inf
    return 1.0


def stable_dt(attention: str, beta: float, method: str) -> float:
    """The largest step for which `method` converges near consensus."""
    return STABILITY_INTERVAL[method] / relaxation_rate(attention, beta)


def exp_limit(dtype: str) -> float:
    """Largest beta for which exp(beta) is finite in `dtype` (scores are cosines <= 1)."""
    return float(np.log(np.finfo(np.dtype(dtype)).max))


def job_hint(model, integ) -> str:
    """Why a job with these settings may blow up or be inaccurate; '' if nothing known."""
    beta = model.beta * model.beta_factor  # the effective beta (model.beta_scale)
    if model.attention == "unnormalized" and beta > exp_limit(integ.dtype):
        return (f"model.beta: exp(beta) overflows {integ.dtype} for beta > "
                f"{exp_limit(integ.dtype):.1f} under unnormalized attention; these jobs end "
                f"with status 1 (non-finite)")
    step = _step_hint(model, integ, beta)
    if step:
        return step
    # the energy sums n^2 terms up to e^beta, in float64 whatever the dtype
    energy_limit = exp_limit("float64") - 2 * math.log(model.n)
    if beta > energy_limit:
        return (f"model.beta: the energy E_beta overflows float64 for beta > {energy_limit:.1f}"
                f" at n={model.n} and is stored as inf; the dynamics and the other observables "
                "stay finite")
    return ""


def _step_hint(model, integ, beta: float) -> str:
    """Whether dt is too large for the method near consensus; '' for a layer model, which has
    no clock (dt does not enter it)."""
    if not model.kind.clock:
        return ""
    rate = relaxation_rate(model.attention, beta)
    if integ.method == "layer" and integ.dt * rate >= 1.0:
        return (f"integrate.dt: {integ.dt:g} with layer at beta={beta:g}: near "
                f"consensus a step advances the flow by dt / (1 + dt r) = "
                f"{integ.dt / (1 + integ.dt * rate):.3g} (relaxation rate r = {rate:.3g}), so "
                f"times run {1 + integ.dt * rate:.3g}x slow; dt < {1 / rate:.3g} keeps that "
                f"under 2x (the layer step is stable for any dt); dt is used as given")
    limit = stable_dt(model.attention, beta, integ.method)
    if integ.dt >= limit:
        return (f"integrate.dt: {integ.dt:g} is too large for {model.attention} attention at "
                f"beta={beta:g} with {integ.method}; a stable step is dt < {limit:.3g} "
                f"(relaxation rate {rate:.3g} near consensus); dt is used as given")
    return ""


def warnings(jobs) -> list[str]:
    """One line per problem and (attention, method, dt, dtype), stated for its largest beta."""
    groups: dict[tuple, list] = {}
    for job, count in kinds(jobs):  # a job's steps do not depend on its seed
        model, integ = job.model, job.integrate
        hint = job_hint(model, integ)
        if hint:
            key = (hint.partition(":")[0], model.attention, integ.method, integ.dt, integ.dtype)
            groups.setdefault(key, []).append((job, count))
    lines = []
    for group in groups.values():
        betas = [j.model.beta for j, _ in group]
        worst = group[betas.index(max(betas))][0]
        span = f"beta {min(betas):g} to {max(betas):g}" if len(set(betas)) > 1 else \
            f"beta {betas[0]:g}"
        jobs_in = sum(count for _, count in group)
        lines.append(f"{job_hint(worst.model, worst.integrate)} [{jobs_in} job(s), {span}]")
    return lines
