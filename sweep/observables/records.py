"""The results variables, declared once, as records: no Numba here, so configs, plans and the
results schema read them without compiling anything.

An `Observable` is one column of what an integration records at each save, over (axes...,
time): its name, long name and units (the variable's attributes), the range it can lie in, the
least save level that computes it, its column, the line docs/results.md gives it, and which
function computes it on each path (general, rows, lanes, blocked). Everything else is derived
from these records: kernels.codes' SERIES, OBSERVABLES, RANGES and save_level, the column
numbers the kernels write (COLUMN), and the table of docs/results.md (observables._docs).

Adding an observable: a record here and, for one that is a function of the tokens x: [n, d]
alone, its `kernel` ("module:function", called as function(x, *parameters) -> float at every
save that computes everything, on every path: observables.extra); one that needs a path's own
sums is written into that path's functions and named in `paths`. Numba's cache does not see
a new record (its callers' files are unchanged): in a checkout, `make clean` after adding one.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field, replace

# How much a save of the lanes and rows paths computes (gramobs.observe_pairs): the order
# parameter and the clustered fraction (CLOSE), with the cosines (COUNTS), with the clusters'
# union-find too (PAIRS: all that the Gram matrix alone gives), or everything (ALL). The
# blocked path's saves below ALL compute all of PAIRS and skip the rest, or at CLOSE count the
# close pairs alone (blocked.observe); the general path always computes everything.
SAVE_CLOSE, SAVE_COUNTS, SAVE_PAIRS, SAVE_ALL = 0, 1, 2, 3


@dataclass(frozen=True)
class Paths:
    """Which function computes an observable on each path, as module.function under sweep/
    (tests/test_records.py checks that each names a function)."""

    general: str
    rows: str
    lanes: str
    blocked: str


def everywhere(function: str) -> Paths:
    """One function on every path."""
    return Paths(function, function, function, function)


def fast(rows: str, lanes: str | None = None, blocked: str | None = None,
         general: str = "kernels.general.observables.observe") -> Paths:
    """Paths where the fast paths share rows' function unless told otherwise."""
    return Paths(general, rows, lanes or rows, blocked or rows)


@dataclass(frozen=True)
class Variable:
    """A results variable: name, long_name and units attributes, the range it lies in
    (bounds: numbers, "n" the token count, "log n" its logarithm, None open), and its line
    in docs/results.md (meaning; None where the long name says it)."""

    name: str
    long_name: str
    meaning: str | None
    range: tuple | None = None
    units: str = field(default="1", kw_only=True)


@dataclass(frozen=True)
class Observable(Variable):
    """A column of the series every integration records. level: the least save level that
    computes it (SAVE_*); resolved: one of the cluster-resolved columns (groups.resolve);
    kernel and parameters: see the module docstring; column: its place, set by `_numbered`."""

    paths: Paths | None = None
    level: int = SAVE_ALL
    resolved: bool = False
    kernel: str | None = None
    parameters: tuple = ()
    column: int = -1


def _numbered(records: tuple[Observable, ...]) -> tuple[Observable, ...]:
    return tuple(replace(r, column=k) for k, r in enumerate(records))


_PAIRS = "observables.summary.pair_columns"
_SPAN = "observables.span.span_dimension"
POINTS_RTOL = 1e-3  # n_points' tolerance, relative to the largest norm
SPAN_RTOL = 1e-3  # span_dimension's tolerance, relative to the largest singular value
_GRAM_RANK = "observables.gramrank.gram_rank"
GRAM_COSINE = 0.9999  # gram_rank's threshold, the reference codes' (arXiv 2312.10794)
_GROUPS = "observables.groups.resolve"
_COMPONENTS = "observables.summary.components"
_OUTSIDE = fast("observables.gramobs.outside_columns", blocked="observables.tiles."
                "outside_tile", general="kernels.general.observables.outside_row")


def _eigen(identity: str) -> Paths:
    """The fast paths run V = I only; the general path fits V (observables/eigenspace.py)."""
    fast_path = f"observables.eigenspace.{identity}"
    return Paths("observables.eigenspace.fit", fast_path, fast_path, fast_path)


RECORDS = _numbered((
    Observable("order_parameter", "order parameter |(1/n) sum_i x_i|",
               "r = \\|(1/n) sum_i x_i\\|", (0.0, 1.0),
               fast("observables.summary.order_parameter", lanes="kernels.lanes.order_lanes",
                    general="observables.summary.order_parameter"), SAVE_CLOSE),
    Observable("mean_cosine", "mean pairwise cosine <x_i, x_j> over i != j",
               "mean and minimum of <x_i, x_j> over i != j", (-1.0, 1.0),
               everywhere(_PAIRS), SAVE_COUNTS),
    Observable("min_cosine", "minimum pairwise cosine over i != j",
               "mean and minimum of <x_i, x_j> over i != j", (-1.0, 1.0),
               everywhere(_PAIRS), SAVE_COUNTS),
    Observable("clustered_fraction", "fraction of pairs i != j with cosine > 1 - cluster_eps",
               "fraction of pairs with cosine > 1 - cluster_eps", (0.0, 1.0),
               fast("observables.gramobs.count_close_pairs", lanes="kernels.lanestep."
                    "count_close", blocked="observables.gramobs.link_tile"), SAVE_CLOSE),
    Observable("n_clusters", "number of clusters (components of the cosine > 1 - eps graph)",
               "components of the graph cosine > 1 - eps; largest as a fraction of n",
               (1.0, "n"), everywhere(_COMPONENTS), SAVE_PAIRS),
    Observable("largest_cluster", "size of the largest cluster as a fraction of n",
               "components of the graph cosine > 1 - eps; largest as a fraction of n",
               (0.0, 1.0), everywhere(_COMPONENTS), SAVE_PAIRS),
    Observable("energy",
               "interaction energy E_beta = sum_ij exp(beta <x_i,x_j>) / (2 beta n^2)",
               "E_beta = (1 / (2 beta n^2)) sum_ij exp(beta <x_i, x_j>); at beta = 0, "
               "(1 / (2 n^2)) sum_ij <x_i, x_j>", None,
               fast("observables.gramobs.finish", general="kernels.general.observables."
                    "head_mean")),
    # in nats; not units = "nat", which UDUNITS reads as nano-atmospheres
    Observable("attention_entropy", "mean Shannon entropy of the attention rows, in nats",
               "mean over rows of the Shannon entropy of the attention weights, in nats (units "
               "`1`: UDUNITS reads `nat` as nano-atmospheres)", (0.0, "log n"),
               fast("observables.gramobs.finish", general="kernels.general.observables."
                    "head_mean")),
    # resolved by cluster (observables/groups.py): clusters as above; a group: >= 2 tokens
    Observable("n_groups", "number of clusters of at least 2 tokens (groups)",
               "clusters of at least 2 tokens (\"groups\")", (0.0, "n"),
               everywhere(_GROUPS), resolved=True),
    Observable("singleton_fraction", "fraction of tokens in no group (clusters of one token)",
               "fraction of tokens in no group; `n_clusters` = `n_groups` + n "
               "`singleton_fraction`", (0.0, 1.0), everywhere(_GROUPS),
               resolved=True),
    Observable("overlap_gap", "mean cosine over pairs i != j within a group minus the largest "
               "mean cosine between two groups (NaN with fewer than 2 groups)", None,
               (-2.0, 2.0), everywhere("observables.groups.overlap_gap"), resolved=True),
    Observable("inter_attention", "mean over tokens and heads of the attention weight on "
               "tokens outside the token's cluster",
               "mean over tokens (and heads) of the attention weight a token puts outside its "
               "cluster; a token alone is its own cluster", (0.0, 1.0), _OUTSIDE,
               resolved=True),
    Observable("silhouette", "mean silhouette of the tokens in groups, cosine distance "
               "1 - <x_i, x_j>, singletons left out (NaN with fewer than 2 groups)", None,
               (-1.0, 1.0), everywhere("observables.groups.silhouette"), resolved=True),
    # of x alone: the one kernel on every path (observables/span.py)
    Observable("span_dimension", f"dimension of the span of the tokens: the numerical rank of "
               f"x [n, d], singular values above {SPAN_RTOL:g} times the largest",
               f"numerical rank of the tokens' matrix x [n, d]: how many of its singular values "
               f"exceed {SPAN_RTOL:g} times the largest (`numpy.linalg.matrix_rank(x, "
               f"rtol={SPAN_RTOL:g})`); 1 at total collapse", (1.0, "n"),
               everywhere(_SPAN), kernel="sweep.observables.span:span_dimension",
               parameters=(SPAN_RTOL,)),
    # of x alone (observables/gramrank.py): the clusters counted as a rank, its parameter the
    # cosine threshold
    Observable("gram_rank", f"number of clusters as the numerical rank of the thresholded "
               f"Gram matrix [<x_i, x_j> > {GRAM_COSINE:g}]",
               f"numerical rank of the 0/1 matrix A_ij = [<x_i, x_j> > {GRAM_COSINE:g}] "
               "(`numpy.linalg.matrix_rank(A)`, NumPy's default tolerance): the number of "
               "clusters when each is a clique of that graph; 1 at total collapse",
               (1.0, "n"), everywhere(_GRAM_RANK), kernel="sweep.observables.gramrank:gram_rank",
               parameters=(GRAM_COSINE,)),
    # of x alone (observables/points.py), tolerance 1e-3 relative to the largest norm
    Observable("n_points", "number of distinct token positions: components of the graph "
               "|x_i - x_j| <= 0.001 max_k |x_k|",
               "number of distinct token positions, components of the graph \\|x_i - x_j\\| "
               "<= 0.001 max_k \\|x_k\\| (scale-free); in euclidean space, of the rescaled "
               "tokens: the limit points reached ([models.md](models.md))", (1.0, "n"),
               everywhere("observables.points.n_points"),
               kernel="sweep.observables.points:n_points", parameters=(POINTS_RTOL,)),
    # which eigenspace of V the tokens lie in (observables/eigenspace.py): for V = I the
    # kernels' constants on every path, the general path's fit where V is not the identity
    Observable("v_eigenvalue", "Rayleigh quotient of V over the tokens, "
               "sum_i <x_i, V x_i> / sum_i |x_i|^2",
               "Rayleigh quotient lambda = sum_i <x_i, V x_i> / sum_i \\|x_i\\|^2 of the "
               "value matrix V (the mean of the heads'): with `v_eigen_residual` 0, the "
               "eigenvalue whose eigenspace holds every token; 1 for V = I "
               "([models.md](models.md))", None,
               _eigen("identity_eigenvalue"),
               kernel="sweep.observables.eigenspace:identity_eigenvalue"),
    Observable("v_eigen_residual", "distance of the tokens from one eigenspace of V, "
               "|V X - lambda X| / |X|",
               "\\|V X - lambda X\\| / \\|X\\| (Frobenius norms, the tokens as the "
               "columns of X, lambda = `v_eigenvalue`): 0 when every token is an eigenvector "
               "of V for one eigenvalue; 0 for V = I", (0.0, None),
               _eigen("identity_residual"),
               kernel="sweep.observables.eigenspace:identity_residual"),
))

# per job, over the axes only
SCALAR_RECORDS = (
    Variable("t_cluster", "first recorded time with clustered_fraction >= 1/2 (NaN if never)",
             "first time with clustered_fraction >= 1/2 (NaN if never); of a layer model, the "
             "first layer ([layers.md](layers.md)); of `sweep train`, per checkpoint "
             "([training.md](training.md))", (0.0, None)),
    Variable("max_clusters", "maximum of n_clusters over saved times t > 0",
             "maximum of n_clusters over saved times t > 0 (layers >= 1 of a layer model; per "
             "checkpoint of `sweep train`)", (1.0, "n")),
    Variable("status", "job status (flag_values, flag_meanings)",
             "0 ok, 1 non-finite values (a result: the run exits 0), 2 failed, -1 missing; CF "
             "`flag_values`/`flag_meanings` (int8) say so in the file"),
    Variable("wall_seconds", "wall-clock time spent on the job",
             "time the job took (the one variable that differs between runs)", units="s"),
)

OBSERVABLES = tuple(r.name for r in RECORDS)
N_OBS = len(RECORDS)
# the columns as compile-time constants for the kernels: out[COLUMN.energy]
COLUMN = namedtuple("Columns", OBSERVABLES)(*range(N_OBS))
RESOLVED = tuple(r.name for r in RECORDS if r.resolved)
STANDALONE = tuple(r for r in RECORDS if r.kernel is not None)


def save_level(columns: tuple[str, ...]) -> int:
    """The least a save must compute to record the series `columns`."""
    by_name = {r.name: r.level for r in RECORDS}
    return max((by_name.get(c, SAVE_ALL) for c in columns), default=SAVE_CLOSE)


def columns_at(level: int) -> tuple[int, ...]:
    """The columns of the observables whose least save level is `level`."""
    return tuple(r.column for r in RECORDS if r.level == level)


def columns_above(level: int) -> tuple[int, ...]:
    """The columns a save at `level` leaves out (NaN): those of the levels above it."""
    return tuple(r.column for r in RECORDS if r.level > level)
