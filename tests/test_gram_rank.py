"""gram_rank (observables/gramrank.py): the clusters counted as the numerical rank of the
thresholded Gram matrix, against numpy.linalg.matrix_rank of that matrix, on every path, and
against the physics: 1 at total collapse, k for k clusters, n_clusters on clean states."""

import numpy as np
import pytest
from test_span import first_save, jittered

import reference as ref
from sweep.kernels.codes import COLUMN, RECORDS
from sweep.observables.gramrank import gram_rank

THRESHOLD, = next(r for r in RECORDS if r.name == "gram_rank").parameters


def arc(count, step):
    """`count` unit tokens on a circle, consecutive ones `step` cosine-angles apart (in units
    of the threshold's angle): a chain of close pairs when step < 1 that is no clique."""
    angles = np.arange(count) * step * np.arccos(THRESHOLD)
    return np.column_stack([np.cos(angles), np.sin(angles), np.zeros(count)])


def cases():
    rng = np.random.default_rng(11)
    e = np.eye(6)
    yield "uniform", ref.normalize(rng.standard_normal((20, 5)))
    yield "one cluster", jittered(e[:1, :4], [16], rng)
    yield "two clusters", jittered(ref.normalize(rng.standard_normal((2, 4))), [7, 9], rng)
    yield "orthogonal clusters", jittered(e[:5, :6], [3, 1, 4, 2, 5], rng)
    yield "antipodal pair", jittered([e[0, :3], -e[0, :3]], [4, 3], rng)
    yield "chain of three", arc(3, 0.8)
    yield "chain of seven", arc(7, 0.6)
    yield "chain beside a cluster", np.vstack([arc(5, 0.7), jittered(e[2:3, :3], [4], rng)])
    yield "one token", ref.normalize(rng.standard_normal((1, 3)))


CASES = list(cases())
IDS = [name for name, _ in CASES]


@pytest.mark.parametrize("x", [x for _, x in CASES], ids=IDS)
def test_kernel_is_numpys_matrix_rank_of_the_thresholded_gram(x):
    want = ref.gram_rank(x)
    assert gram_rank(x, THRESHOLD) == want
    assert gram_rank(x[::-1].copy(), THRESHOLD) == want  # the tokens' order does not matter
    assert gram_rank(x.astype(np.float32), THRESHOLD) == ref.gram_rank(x.astype(np.float32))


def test_physics_collapse_clusters_and_chains():
    ranks = {name: ref.gram_rank(x) for name, x in CASES}
    assert ranks["one cluster"] == 1 and ranks["uniform"] == 20 and ranks["one token"] == 1
    assert ranks["two clusters"] == 2 and ranks["orthogonal clusters"] == 5
    assert ranks["antipodal pair"] == 2
    # a chain of close pairs is one component (n_clusters 1) of rank above 1
    assert ranks["chain of three"] == 3 and ranks["chain of seven"] > 1


@pytest.mark.parametrize("k", [1, 2, 3, 6])
def test_equals_n_clusters_on_clean_clustered_states(k):
    rng = np.random.default_rng(k)
    x = jittered(np.eye(8)[:k], rng.integers(1, 6, size=k), rng)
    obs = first_save("general", x)
    assert obs[COLUMN.gram_rank] == obs[COLUMN.n_clusters] == k == gram_rank(x, THRESHOLD)


@pytest.mark.parametrize("path", ["general", "rows", "lanes", "blocked", "symmetric"])
def test_every_path_records_numpys_rank(path):
    for name, x in CASES:
        if path == "lanes" and x.shape[1] > 8:
            continue
        assert first_save(path, x)[COLUMN.gram_rank] == ref.gram_rank(x), name


def test_large_collapsed_state_is_cheap_and_one():
    """A clique component is one class of rows: rank 1 without an n x n eigenproblem."""
    rng = np.random.default_rng(3)
    x = jittered(np.eye(4)[:2], [900, 700], rng)
    assert gram_rank(x, THRESHOLD) == 2
    for path in ("rows", "blocked"):
        assert first_save(path, x)[COLUMN.gram_rank] == 2, path


def test_sweep_run_records_it(tmp_path):
    import sweep
    from sweep.execution.simulate import initial_state

    cfg = sweep.load({"name": "rank", "model": {"attention": "softmax", "d": 4, "n": 24},
                      "init": {"kind": "clusters", "clusters": 3, "spread": 0.0},
                      "integrate": {"method": "euler", "dt": 0.1, "t_max": 1.0,
                                    "save_every": 0.5},
                      "grid": {"beta": [1.0], "d": [3, 8], "seed": {"range": [0, 2]}},
                      "output": {"path": str(tmp_path / "rank.nc")}})
    ds = sweep.run(cfg, workers=1)
    assert ds.gram_rank.attrs["long_name"] == \
        next(r for r in RECORDS if r.name == "gram_rank").long_name
    for job in sweep.plan(cfg).jobs:
        got = ds.gram_rank.sel(d=job.model.d, seed=job.seed, beta=1.0)
        x = initial_state(job)
        assert got.isel(time=0) == ref.gram_rank(x) == gram_rank(x, THRESHOLD)
        assert ((got >= 1) & (got <= job.model.n)).all()


def test_grouped_is_a_stable_argsort_of_the_roots():
    from sweep.observables.gramrank import grouped

    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 64, 301):
        roots = rng.integers(0, n, n)
        np.testing.assert_array_equal(grouped(roots), np.argsort(roots, kind="mergesort"))


@pytest.mark.parametrize("x", [x for _, x in CASES], ids=IDS)
def test_quick_forest_joins_what_the_close_pairs_join(x):
    """quick_forest (flat, measuring only pairs not yet joined) and close_forest (every pair,
    union-find) give every token the same root, the least index of its component."""
    from sweep.observables.gramrank import close_forest, quick_forest
    from sweep.observables.summary import find

    for y in (x, x[::-1].copy()):
        parent, _ = close_forest(y, THRESHOLD)
        roots = [find(parent, i) for i in range(len(y))]
        quick = quick_forest(y, THRESHOLD, (y * y).sum(axis=1))
        assert list(quick) == roots


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("d", [1, 2, 3, 64])
def test_rows_left_at_their_first_terms_change_no_component(d, dtype):
    """quick_forest and n_points leave unmeasured a row whose first terms are all past its
    reach, and quick_forest each pair past the row's reach (the largest over the row's j,
    from the largest norm): on states where some rows are left and some not, of unequal
    norms, their components are those of every pair measured."""
    from sweep.observables.gramrank import close_forest, quick_forest
    from sweep.observables.points import n_points
    from sweep.observables.summary import find

    rng = np.random.default_rng(d)
    alone = ref.normalize(rng.standard_normal((150, d)))
    centres = ref.normalize(rng.standard_normal((5, d)))
    tight = centres[rng.integers(0, 5, 100)] + 1e-7 * rng.standard_normal((100, d))
    x = (np.vstack([alone, tight])[rng.permutation(250)]
         * rng.uniform(0.9, 1.1, (250, 1))).astype(dtype)
    parent, _ = close_forest(x, THRESHOLD)
    n2 = (x.astype(np.float64) ** 2).sum(axis=1)
    assert list(quick_forest(x, THRESHOLD, n2)) == [find(parent, i) for i in range(len(x))]
    assert n_points(x, 1e-3) == ref.points_count(x.astype(np.float64))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_head_squares_are_the_partial_sums_a_distance_starts_with(dtype):
    """points.head_squares gives, bit for bit, the sum of a distance's first terms as
    near() and quick_forest's squares() add them in order, and counts those within its reach;
    where one passes a reach, the whole sum does too (the pair is skipped with the answer the
    whole sum would give)."""
    from sweep.observables.points import head_squares, heads, near

    rng = np.random.default_rng(5)
    for d in (1, 2, 3, 16):
        x = rng.standard_normal((40, d)).astype(dtype)
        x[7] = x[3]  # a pair at distance 0
        out, h = np.full(len(x), np.nan), heads(x)
        for i in range(len(x)):
            within = head_squares(h, i, out, 1.0)
            e = x[i + 1:, :2].astype(np.float64) - x[i, :2]
            expect = e[:, 0] * e[:, 0]
            if d > 1:
                expect = expect + e[:, 1] * e[:, 1]
            assert out[i + 1:].tobytes() == expect.tobytes()
            assert within == (expect <= 1.0).sum()
            for j in range(i + 1, len(x)):
                for reach in (out[j] / 2, out[j], 2 * out[j] + 1e-12):
                    if out[j] > reach:  # skipped: the whole sum says no as well
                        assert not near(x, i, j, reach)
                    elif d <= 2:  # these terms are the whole sum
                        assert near(x, i, j, reach)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cosine_rows_are_cosine_bit_for_bit(dtype):
    """cosines_block and cosines_to (the vectorised rows of cosines) give each cosine with the
    bits of cosine(), the in-order sum every path's count rests on."""
    from numba import njit

    from sweep.observables.gramrank import BLOCK, cosine, cosines_block, cosines_to, transposed

    @njit
    def rows(x, i0, i1, lo):
        cols = transposed(x, np.arange(x.shape[0]))
        block, one = np.full((BLOCK, x.shape[0]), np.nan), np.full(x.shape[0], np.nan)
        cosines_block(cols, i0, i1, lo, block)
        cosines_to(cols[:, i0], cols, lo, one)
        want = np.empty((i1 - i0, x.shape[0] - lo))
        for b in range(i1 - i0):
            for j in range(lo, x.shape[0]):
                want[b, j - lo] = cosine(x, i0 + b, j)
        return block[: i1 - i0, lo:], one[lo:], want

    rng = np.random.default_rng(3)
    for n, d in ((1, 3), (9, 2), (40, 16), (70, 128)):
        x = rng.standard_normal((n, d)).astype(dtype)
        for i0, lo in ((0, 0), (0, 1), (min(8, n - 1), min(9, n))):
            block, one, want = rows(x, i0, min(i0 + BLOCK, n), lo)
            assert block.tobytes() == want.tobytes()
            assert one.tobytes() == want[0].tobytes()
