"""What a layer-model job costs: counted flops and the bytes it holds (for `sweep plan` and
the runner's memory budget), beside sweep.execution.kernel.job_flop / job_memory, which call
them."""

from __future__ import annotations

from sweep.kernels.codes import N_OBS


def _width(m) -> int:
    return 0 if m.ffn not in ("linear", "mlp") else (m.d if m.ffn == "linear"
                                                     else m.ffn_width or 4 * m.d)


def flop(job) -> float:
    """Per layer and head: 4 n d^2 (the matrix products, when not the identity) and
    n^2 (4 d + 20) (scores, exponentials, weighted sums); the FFN's 4 n d m; the same again
    for the observables at each of the L + 1 layers."""
    m = job.model
    n, d = m.n, m.d
    matrix = 0 if m.qk == m.v == "identity" and m.weights is None else 4 * n * d * d
    attention = m.heads * (n * n * (4 * d + 20) + matrix)
    return m.layers * (attention + 4 * n * d * _width(m)) + (m.layers + 1) * attention


def memory(job, positions: str = "none") -> dict[str, int]:
    """Bytes a layer-model job holds, by the config key that drives them: every layer's
    parameters, held for the whole run (model.layers; model.weights when a folder gives
    them), a layer's working arrays (scores and weights [h, n, n], keys and values [h, n, d],
    the FFN's hidden [n, m]: model.n), the series and the positions kept (every layer's for
    norm: sphere)."""
    m = job.model
    n, d, h, width = m.n, m.d, m.heads, _width(m)
    matrices = 0 if m.qk == m.v == "identity" and m.weights is None else 2 * h * d * d
    per_layer = matrices + h * d + 6 * d + 2 * d * width + width
    work = 3 * h * n * n + 4 * h * n * d + 2 * n * width + 6 * n * d
    # a sphere model that runs as its flow (sweep.execution.layers.flow) keeps every layer's
    # state to measure token_norm
    every = positions == "trajectory" or m.norm == "sphere"
    kept = (m.layers + 1) * n * d if every else n * d
    params = "model.weights" if m.weights else "model.layers"
    return {params: 8 * m.layers * per_layer + 8 * (m.layers + 1) * (N_OBS + 1),
            "model.n": 8 * work, "output.positions": 8 * kept}
