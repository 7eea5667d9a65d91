"""Every attention variant of the zoo against the NumPy reference (tests/reference.py)."""

import numpy as np
import pytest

import reference as ref
from helpers import allocations, kernel_velocity, run_kernel
from sweep.execution import states
from sweep.kernels.codes import parse_mask
from sweep.kernels.general.model import dynamics

N, D = 9, 4
_R = np.random.default_rng(99)
M3 = _R.standard_normal((3, D, D)) / np.sqrt(D)   # three heads' score matrices
V3 = _R.standard_normal((3, D, D)) / np.sqrt(D)
SYM = (M3 + M3.transpose(0, 2, 1)) / 2
W = _R.standard_normal((D, D)) / np.sqrt(D)

MODELS = {
    "softmax": dict(attention="softmax", beta=2.0),
    "unnormalized": dict(attention="unnormalized", beta=1.0),
    "relu": dict(attention="relu", beta=1.5),
    "hardmax": dict(attention="hardmax", beta=1.0),
    "softmax-matrices": dict(attention="softmax", beta=1.5, qk=M3[0], v=V3[0]),
    "heads-identity": dict(attention="softmax", beta=1.0, heads=3, head_beta=[0.5, 2.0, 4.0]),
    "heads-matrices": dict(attention="softmax", beta=1.0, heads=3, head_beta=[0.0, 1.0, 3.0],
                           qk=M3, v=V3),
    "usa-heads-symmetric": dict(attention="unnormalized", beta=1.0, heads=3, qk=SYM, v=SYM),
    "relu-heads": dict(attention="relu", beta=2.0, heads=3, qk=M3, v=V3),
    "hardmax-heads": dict(attention="hardmax", beta=1.0, heads=3, qk=M3),
    "causal": dict(attention="softmax", beta=2.0, mask="causal"),
    "window": dict(attention="softmax", beta=2.0, mask="window:2"),
    "topk": dict(attention="softmax", beta=2.0, mask="topk:3"),
    "groups": dict(attention="softmax", beta=2.0, mask="groups:4"),
    "leaders": dict(attention="softmax", beta=2.0, mask="leaders:3"),
    "usa-window": dict(attention="unnormalized", beta=1.0, mask="window:1", qk=M3[1]),
    "relu-topk-heads": dict(attention="relu", beta=2.0, heads=3, qk=M3, mask="topk:4"),
    "hardmax-groups": dict(attention="hardmax", beta=1.0, mask="groups:3", v=V3[2]),
    "hardmax-causal": dict(attention="hardmax", beta=1.0, mask="causal"),
    "ffn": dict(attention="softmax", beta=1.0, ffn=W),
    "ffn-heads-leaders": dict(attention="softmax", beta=1.0, heads=3, qk=M3, ffn=W,
                              mask="leaders:2"),
    "noise": dict(attention="softmax", beta=1.0, noise=0.3, noise_key=12345),
    "noise-usa-leaders": dict(attention="unnormalized", beta=1.0, noise=0.1, noise_key=7,
                              mask="leaders:2", qk=M3[2]),
}


def _start(seed=5):
    return states.uniform(N, D, np.random.default_rng(seed))


@pytest.mark.parametrize("name", MODELS)
def test_velocity_matches_reference(name):
    model = MODELS[name]
    x = _start()
    out = kernel_velocity(x, dynamics(**model))
    np.testing.assert_allclose(out, ref.zoo_velocity(x, model), rtol=0, atol=1e-12)


# noise is Euler-Maruyama only, with the euler or the layer drift (configs refuse rk4)
@pytest.mark.parametrize("name,method", [(name, method) for name in MODELS
                                         for method in ("euler", "layer", "rk4")
                                         if method != "rk4" or not MODELS[name].get("noise")])
def test_integration_and_observables_match_reference(name, method):
    model = MODELS[name]
    x0 = _start(7)
    status, obs, x, _ = run_kernel(x0, method=method, dt=0.05, stride=3, n_saves=4, eps=0.05,
                                   model=model)
    want_obs, want_x = ref.zoo_trajectory(x0, model, method, 0.05, 3, 4, 0.05)
    assert status == 0
    np.testing.assert_allclose(x, want_x, rtol=0, atol=1e-12)
    scale = np.maximum(1.0, np.abs(want_obs))
    np.testing.assert_array_less(np.abs(obs - want_obs), 1e-12 * scale)


@pytest.mark.parametrize("method", ["euler", "layer"])
@pytest.mark.parametrize("name", MODELS)
def test_float32_tracks_float64(name, method):
    model = MODELS[name]
    x0 = _start(3)
    kw = dict(method=method, dt=0.02, stride=5, n_saves=4, model=model)
    _, obs64, x64, _ = run_kernel(x0, **kw)
    status, obs32, x32, _ = run_kernel(x0, **kw, dtype=np.float32)
    assert status == 0 and x32.dtype == np.float32
    np.testing.assert_allclose(x32, x64, atol=1e-5)
    np.testing.assert_allclose(obs32[:, [0, 1, 2, 6, 7]], obs64[:, [0, 1, 2, 6, 7]], atol=1e-5)


@pytest.mark.parametrize("kind", ["softmax", "unnormalized", "relu", "hardmax"])
@pytest.mark.parametrize("heads", [2, 3, 5])
def test_identical_heads_give_exactly_one_head(kind, heads):
    x0 = _start(11)
    one = dict(attention=kind, beta=1.3, qk=M3[0], v=V3[0], mask="window:3", ffn=W)
    many = dict(one, heads=heads, qk=np.stack([M3[0]] * heads), head_beta=[1.3] * heads)
    _, obs1, x1, _ = run_kernel(x0, dt=0.05, stride=4, n_saves=5, model=one)
    _, obsh, xh, _ = run_kernel(x0, dt=0.05, stride=4, n_saves=5, model=many)
    np.testing.assert_array_equal(xh, x1)
    np.testing.assert_array_equal(obsh, obs1)


COUNT_ALLOCATIONS = """
import json
import numpy as np
from numba.core.runtime import rtsys
from sweep.kernels.codes import METHOD_CODES, N_OBS
from sweep.kernels.general.drive import integrate
from sweep.kernels.general.model import dynamics
from sweep.execution.states import uniform
r = np.random.default_rng(1)
n, d, h = 10, 4, 3
qk, v, w = r.standard_normal((h, d, d)), r.standard_normal((h, d, d)), r.standard_normal((d, d))
MODELS = [("euler", dict(attention="softmax", mask="topk:4", noise=0.1, ffn=w)),
          ("euler", dict(attention="hardmax", mask="leaders:2", noise=0.2)),
          ("rk4", dict(attention="relu", mask="window:2", ffn=w)),
          ("rk4", dict(attention="unnormalized", mask="groups:3")),
          ("layer", dict(attention="softmax", mask="causal", noise=0.1, ffn=w))]
def count(method, model, stride):
    dyn = dynamics(beta=1.5, heads=h, qk=qk, v=v, noise_key=11, **model)
    args = (uniform(n, d, np.random.default_rng(2)), dyn, METHOD_CODES[method], 0.01, stride,
            1e-3, np.zeros((3, N_OBS)), np.zeros((0, n, d)), np.zeros(1, dtype=np.int64))
    integrate(*args)
    before = rtsys.get_allocation_stats().alloc
    integrate(*args)
    return rtsys.get_allocation_stats().alloc - before
print(json.dumps([[count(method, model, s) for s in (1, 40)] for method, model in MODELS]))
"""


def test_step_loop_allocates_nothing():
    # several heads with their own matrices, masks, noise, ffn: the same number of
    # allocations for 2 and 80 steps, so every scratch array is made once per job
    counts = allocations(COUNT_ALLOCATIONS)
    assert len(counts) == 5
    for few, many in counts:
        assert few == many > 0


def test_identity_heads_give_exactly_one_head():
    x0 = _start(12)
    _, obs1, x1, _ = run_kernel(x0, model=dict(attention="softmax", beta=2.0), n_saves=6)
    _, obs3, x3, _ = run_kernel(x0, model=dict(attention="softmax", beta=2.0, heads=3),
                                n_saves=6)
    np.testing.assert_array_equal(x3, x1)
    np.testing.assert_array_equal(obs3, obs1)


def test_noise_is_reproducible_and_keyed():
    x0 = _start(13)
    model = dict(attention="softmax", beta=1.0, noise=0.5, noise_key=2**62 + 17)
    _, _, xa, _ = run_kernel(x0, n_saves=5, model=model)
    _, _, xb, _ = run_kernel(x0, n_saves=5, model=model)
    _, _, xc, _ = run_kernel(x0, n_saves=5, model=dict(model, noise_key=18))
    np.testing.assert_array_equal(xa, xb)
    assert np.abs(xa - xc).max() > 1e-3


def test_noise_normals_are_standard():
    z = ref.normals(2024, 0, 4000, 5).ravel()
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.02
    assert abs(np.corrcoef(z[:-1], z[1:])[0, 1]) < 0.03


def test_hardmax_follows_the_nearest_other_token():
    x = np.array([[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.0, 0.6, 0.8]])
    out = kernel_velocity(x, dynamics("hardmax", 1.0))
    np.testing.assert_allclose(out[2], x[1] - x[1] @ x[2] * x[2], atol=1e-15)
    np.testing.assert_allclose(out[0], x[1] - x[1] @ x[0] * x[0], atol=1e-15)


@pytest.mark.parametrize("method", ["euler", "layer"])
def test_leaders_never_move_and_groups_split_evenly(method):
    x0 = _start(14)
    _, _, x, _ = run_kernel(x0, method=method, n_saves=10,
                            model=dict(attention="softmax", beta=1.0, mask="leaders:3"))
    np.testing.assert_array_equal(x[:3], x0[:3])
    assert np.abs(x[3:] - x0[3:]).max() > 1e-2
    blocks = ref.allowed(N, "groups", 4, None)
    assert sorted(blocks.sum(axis=1)) == [2] * 6 + [3] * 3  # 9 tokens: sizes 2, 2, 2, 3


@pytest.mark.parametrize("text,code", [("dense", (0, 0)), ("causal", (1, 0)),
                                       ("window:0", (2, 0)), ("topk:5", (3, 5)),
                                       ("groups:2", (4, 2)), ("leaders:1", (5, 1))])
def test_parse_mask(text, code):
    assert parse_mask(text) == code


@pytest.mark.parametrize("text", ["sparse", "window", "topk:0", "groups:x", "causal:2",
                                  "leaders:-1"])
def test_parse_mask_refuses(text):
    with pytest.raises(ValueError):
        parse_mask(text)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 6])
def test_keep_top_keeps_the_k_largest_smaller_j_on_ties(k):
    from sweep.kernels.general.masks import keep_top

    scores = np.array([1.0, 2.0, 2.0, 0.5, 2.0, 3.0])
    s, cols = scores.copy(), np.arange(6)
    m = keep_top(s, cols, 6, k)
    want = np.argsort(-scores, kind="stable")[:k]
    assert m == k and sorted(cols[:m]) == sorted(want)
    np.testing.assert_array_equal(s[:m], scores[cols[:m]])
