"""The two kinds of model, decided once (`Model.kind`): a dynamics, integrated in time, or a
layer stack (docs/layers.md), run block by block. What differs between them is stated here,
as the kind's attributes and methods; callers ask the kind.

A dynamics (model.layers: null) has a clock: integrate.dt, t_max and save_every decide its
steps and its save grid, its series run over `time`, and a step size can be unstable. A layer
stack (model.layers: L) counts its steps by its layers: its series run over `layer` 0..L, it
records LAYER_SERIES beside the observables, it may read a weights folder, and dt does not
enter it. Its kernel plan is its flow's fast kernel where it is a flow that takes one
(sweep.execution.kernel), else the per-layer run (sweep.execution.layers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sweep.kernels.codes import LAYER_SERIES


@dataclass(frozen=True)
class ModelKind:
    name: str
    series_dim: str  # the dimension its series run over
    extra_series: tuple[str, ...]  # recorded after the chosen observables
    clock: bool  # integrate.dt, t_max and save_every enter it (a step can be unstable)
    stacked: bool  # a stack of model.layers blocks, each one step (may read model.weights)

    def record_values(self, model, integ) -> np.ndarray:
        """The coordinates of a job's rows of series: the save grid 0, save_every, ..., t_max
        of a dynamics (rounded, so that grids of different save_every share their common
        times), the layers 0..L of a stack."""
        if self.stacked:
            return np.arange(model.layers + 1)
        return np.round(np.arange(integ.n_saves) * integ.save_every, 12)


DYNAMICS = ModelKind("dynamics", series_dim="time", extra_series=(), clock=True, stacked=False)
LAYER_STACK = ModelKind("layer stack", series_dim="layer", extra_series=tuple(LAYER_SERIES),
                        clock=False, stacked=True)


def kind_of(layers: int | None) -> ModelKind:
    """The one place that reads the kind off the config: model.layers null is a dynamics."""
    return DYNAMICS if layers is None else LAYER_STACK
