"""The cluster-resolved observables (n_groups, singleton_fraction, overlap_gap,
inter_attention, silhouette) on every kernel path: the exact values of equiangular clusters,
hand-built cases, and the NumPy oracle on clustered states under every model."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import reference as ref
from sweep.execution.states import uniform
from sweep.kernels.blocked import integrate_blocked
from sweep.kernels.codes import COLUMN as C
from sweep.kernels.codes import N_OBS
from sweep.kernels.general.drive import integrate
from sweep.kernels.general.model import dynamics
from sweep.kernels.rows import integrate_rows

PATHS = ["general", "rows", "blocked", "symmetric"]


def observe(path, x, beta, eps=1e-3, kind="softmax", model=None):
    """The observables of x: [n, d] as path records them at a job's first save."""
    x = np.array(x, dtype=np.float64)
    obs = np.full((1, N_OBS), np.nan)
    args = (0, 0.1, 1, eps, obs, np.zeros((0,) + x.shape), np.zeros(1, dtype=np.int64))
    if path == "general":
        dyn = dynamics(kind, beta) if model is None else dynamics(**model)
        integrate(x, dyn, *args)
    elif path == "rows":
        integrate_rows(x, float(beta), kind == "softmax", *args)
    else:
        with threadpool_limits(1, user_api="blas"):
            integrate_blocked(x, float(beta), kind == "softmax", *args,
                              symmetric=path == "symmetric")
    return obs[0]


def equiangular_clusters(k, m, c, d, rng):
    """k unit centres with pairwise cosine c, m copies of each (zero spread), in shuffled
    order and a random orientation: x [k m, d]."""
    centres = np.linalg.cholesky((1 - c) * np.eye(k) + c * np.ones((k, k)))
    rotation = np.linalg.qr(rng.standard_normal((d, d)))[0]
    x = np.zeros((k, d))
    x[:, :k] = centres
    x = ref.normalize(x @ rotation.T)
    return x[rng.permutation(np.repeat(np.arange(k), m))]


def inter_exact(n, m, c, beta):
    """Weight outside one's cluster under identity softmax: (n - m) e^{beta c} / (m e^beta +
    (n - m) e^{beta c}), written with e^{beta (c - 1)} so large beta cannot overflow."""
    e = (n - m) * np.exp(beta * (c - 1))
    return e / (m + e)


# (k, m, c, beta, d); 3 x 100 tokens span two row tiles of the blocked paths
EQUIANGULAR = [(3, 4, 0.2, 2.0, 5), (4, 5, -0.25, 8.0, 4), (2, 6, 0.5, 30.0, 3),
               (3, 100, 0.1, 5.0, 6)]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("k,m,c,beta,d", EQUIANGULAR)
def test_equiangular_clusters_are_exact(path, k, m, c, beta, d):
    x = equiangular_clusters(k, m, c, d, np.random.default_rng(k * m))
    obs = observe(path, x, beta)
    n = k * m
    assert obs[C.n_groups] == k and obs[C.singleton_fraction] == 0 and obs[C.n_clusters] == k
    assert abs(obs[C.overlap_gap] - (1 - c)) < 1e-12
    assert abs(obs[C.inter_attention] - inter_exact(n, m, c, beta)) < 1e-12
    assert abs(obs[C.silhouette] - 1.0) < 1e-12  # a_i = 0: every token sits on its centre


def test_inter_attention_is_the_mean_over_heads():
    x = equiangular_clusters(3, 4, 0.3, 4, np.random.default_rng(0))
    obs = observe("general", x, 0.0, model=dict(attention="softmax", beta=1.0, heads=2,
                                                 head_beta=[2.0, 6.0]))
    want = (inter_exact(12, 4, 0.3, 2.0) + inter_exact(12, 4, 0.3, 6.0)) / 2
    assert abs(obs[C.inter_attention] - want) < 1e-12


def hand_built():
    """Three copies of e0, two of e1, e2 and -e0 alone: 2 groups, 2 singletons."""
    e = np.eye(3)
    return np.array([e[0], e[1], e[0], -e[0], e[1], e[0], e[2]])


@pytest.mark.parametrize("path", PATHS)
def test_groups_and_singletons_of_a_hand_built_state(path):
    obs = observe(path, hand_built(), 1.0)
    assert obs[C.n_groups] == 2 and obs[C.singleton_fraction] == pytest.approx(2 / 7)
    assert obs[C.n_clusters] == obs[C.n_groups] + 7 * obs[C.singleton_fraction]  # 4 clusters in all
    assert obs[C.overlap_gap] == pytest.approx(1.0)  # coincident within, orthogonal between
    # e0 and e1 tokens: a_i = 0, b_i = 1; the singletons take no part
    assert obs[C.silhouette] == pytest.approx(1.0)


@pytest.mark.parametrize("path", PATHS)
def test_a_chain_of_close_pairs_is_one_group(path):
    # consecutive tokens 0.02 rad apart: each pair is close at eps = 1e-3, the ends are not
    t = 0.02 * np.arange(6)
    x = np.stack([np.cos(t), np.sin(t), 0 * t], axis=1)
    obs = observe(path, x, 1.0)
    assert (obs[C.n_groups], obs[C.singleton_fraction]) == (1, 0)
    assert np.isnan(obs[C.overlap_gap]) and np.isnan(obs[C.silhouette])  # one group only
    np.testing.assert_allclose(obs, ref.observables(x, "softmax", 1.0, 1e-3), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("path", PATHS)
def test_without_groups_every_token_is_alone(path):
    x = uniform(9, 3, np.random.default_rng(1))
    obs = observe(path, x, 2.0)
    a = ref.attention(x, "softmax", 2.0)
    assert (obs[C.n_groups], obs[C.singleton_fraction]) == (0, 1)
    assert np.isnan(obs[C.overlap_gap]) and np.isnan(obs[C.silhouette])
    assert abs(obs[C.inter_attention] - (1 - np.diag(a).mean())) < 1e-13


def clustered(n, d, rng, groups=4, spread=0.02, alone=5):
    """groups tight clusters of random sizes and `alone` scattered tokens, shuffled."""
    centres = uniform(groups, d, rng)
    x = centres[rng.integers(0, groups, n - alone)]
    x = x + spread * rng.standard_normal(x.shape)
    x = np.concatenate([x, uniform(alone, d, rng)])
    return ref.normalize(x[rng.permutation(n)])


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kind", ["softmax", "unnormalized"])
@pytest.mark.parametrize("n,d,beta,spread,eps", [(24, 3, 3.0, 0.02, 0.01),
                                                 (40, 8, 10.0, 0.02, 0.01),
                                                 (300, 5, 1.5, 0.02, 0.01),
                                                 (60, 5, 2.0, 0.12, 0.3)])  # broad: 0.88
def test_every_path_matches_the_oracle_on_clustered_states(path, kind, n, d, beta, spread, eps):
    x = clustered(n, d, np.random.default_rng(n + d), spread=spread)
    got = observe(path, x, beta, eps=eps, kind=kind)
    want = ref.observables(x, kind, beta, eps)
    assert want[C.n_groups] >= 2 and 0 < want[C.singleton_fraction] < 1  # all exercised
    scale = np.maximum(1.0, np.abs(want))
    np.testing.assert_array_less(np.abs(got - want), 1e-12 * scale)


rng = np.random.default_rng(3)
QK, V = rng.standard_normal((3, 5, 5)) / np.sqrt(5), rng.standard_normal((3, 5, 5))
ZOO = [dict(attention="softmax", mask="topk:4", heads=3, qk=QK, v=V),
       dict(attention="hardmax", mask="leaders:3"),
       dict(attention="relu", mask="window:2", heads=3, qk=QK, v=V),
       dict(attention="unnormalized", mask="groups:3", heads=2, head_beta=[0.5, 4.0]),
       dict(attention="softmax", mask="causal")]


@pytest.mark.parametrize("model", ZOO, ids=lambda m: f"{m['attention']}-{m['mask']}")
def test_general_path_matches_the_oracle_under_every_model(model):
    x = clustered(30, 5, np.random.default_rng(4))
    model = dict(beta=2.0, **model)
    got = observe("general", x, 0.0, eps=0.01, model=model)
    want = ref.zoo_observables(x, model, 0.01)
    assert want[C.n_groups] >= 2
    scale = np.maximum(1.0, np.abs(want))
    np.testing.assert_array_less(np.abs(got - want), 1e-12 * scale)


def test_reference_silhouette_of_a_hand_built_case():
    # e0, e0 | e1, (e0 + e1)/sqrt(2), h = 1 - cos 45 degrees: (a, b) = (0, (1 + h) / 2) for
    # the e0s, (h, 1) for e1, (h, h) for the last
    e = np.eye(2)
    x = np.array([e[0], e[0], e[1], ref.normalize(e[0] + e[1])])
    h = 1 - np.sqrt(0.5)
    want = [1.0, 1.0, 1 - h, 0.0]
    assert ref.silhouette(x, np.array([0, 0, 1, 1])) == pytest.approx(np.mean(want), rel=1e-14)
