"""Many small systems at once, one per SIMD lane: the fast path for n < 256, d <= LANES_MAX_D.

A batch of systems of one shape is held as X: [n, d, L], system b in lane b, so every inner
loop runs over the L systems with unit stride and vectorises whatever n and d are (each
vector instruction advances 4 systems on AVX2, 8 on AVX-512). Nothing is summed across
lanes, so the lanes never meet: a system's numbers are the same whatever batch, block or
lane it runs in, or alone (fewer than LANES_MIN systems run one at a time through
velocity_columns, which gives the same bits: tests/test_lanes.py).

Each pair i < j is visited once per velocity: g_ij = sum_k x_ik x_jk (k in order), its
weight w_ij = exp(beta (g_ij - c)) (c = 1 softmax, 0 unnormalized, as rows.py) added to both
tokens' sums, and the diagonal on its own. Half the exponentials of rows.py's whole n x n
matrix, and no matrix: what stopped the symmetric half there (rows' docstring) was the
unpacking into both halves of a matrix, which lanes do not need. Every token's sums come out
in the order j = 0, 1, ..., n - 1 (the pairs (j, i) of earlier rows, then the diagonal, then
the pairs (i, j)), with no reassociation: compiled with contraction into fused multiply-adds
only (jit_fma), which keeps exp1 exact.

For d = 2 and 3 the pair loop (pair_sums_circle, pair_sums_sphere) is written in simd.py's
f64x4 values, WIDTH lanes at a time: a token's position and sums stay in registers across
its pairs, and no run-time alias checks guard each 64-lane loop, as they do when each step
of a pair is a loop over the lanes for LLVM to vectorise (pair_sums_loops, which serves
d >= 4, where a token no longer fits in registers and the loops are the faster:
docs/performance.md). The operations are the loops' own, so the bits are theirs; a block's
lanes are padded to a multiple of WIDTH with copies of its last system, whose numbers are
never read.

At (32, 2), the reference workload's shape, a layer step with a save of the clustered fraction
at every step: 1.35-1.7 us per system against rows.py's 3.1-4.0 in batches of 128
(docs/performance.md).
A save that records only the order parameter and the clustered fraction (SAVE_CLOSE) counts
the close pairs inside the next step's pair loop (its g_ij are the save's); any other save
builds the system's Gram matrix from its lane (the same g_ij) and uses gramobs as rows.py
does. Float32 systems are computed in float64 and rounded to float32 after every step.
The time loop (integrate_lanes) follows timeloop.run's rules (save 0, then save_stride steps
before each further save, the stop flag polled before every step, a state that is not
finite ending its system's run at that save), written over lanes: a system that ends is
left where it ended while the others go on.
"""

import numpy as np

from sweep.kernels import simd as v
from sweep.kernels._jit import jit, jit_fma, jit_fma_inline
from sweep.kernels.codes import (
    LANES,
    LANES_MIN,
    LAYER,
    NONFINITE,
    OK,
    RK4,
    SAVE_ALL,
    SAVE_CLOSE,
    STOPPED,
)
from sweep.kernels.expfast import exp1, exp4
from sweep.kernels.gramobs import observe_pairs, observe_weighted
from sweep.kernels.groups import groups_scratch

# codes.LANES_MAX_D: up to here lanes beat rows.py per system in batches (d = 16: even).
# codes.LANES: systems per block (X of (32, 2) is 32 KiB, the stages as much again).
# codes.LANES_MIN: fewer systems run one at a time (velocity_columns): shorter loops over
# lanes cost more than they vectorise (16 lanes took 2x the time of 32 per system).


@jit_fma_inline
def dots(X, i, Y, j, G):
    """G[b] = <x_i, y_j> in every lane b, the coordinates summed in order: the one way a g_ij
    is computed here (X, Y: [n, d, L])."""
    d, L = X.shape[1], X.shape[2]
    for b in range(L):
        G[b] = X[i, 0, b] * Y[j, 0, b]
    for k in range(1, d):
        for b in range(L):
            G[b] += X[i, k, b] * Y[j, k, b]


@jit_fma_inline
def pair_sums_loops(X, beta, c, V, Z, G, Wt, count, eps1, counting):
    """Z[i] = sum_j w_ij and V[i] = sum_j w_ij x_j (j = 0, 1, ..., n - 1 in order) in every
    lane, each pair i < j visited once, each of its steps a loop over the lanes for LLVM to
    vectorise (any d; G, Wt: [L] scratch); counting: add to count[b] the ordered pairs
    i != j with g_ij > eps1[b]."""
    n, d, L = X.shape
    for i in range(n):
        for b in range(L):
            Z[i, b] = 0.0
        for k in range(d):
            for b in range(L):
                V[i, k, b] = 0.0
    twice = 2 if counting else 0  # each close pair counts as (i, j) and (j, i)
    for i in range(n):
        dots(X, i, X, i, G)  # the diagonal
        for b in range(L):
            Wt[b] = exp1(beta[b] * (G[b] - c))
            Z[i, b] += Wt[b]
        for k in range(d):
            for b in range(L):
                V[i, k, b] += Wt[b] * X[i, k, b]
        for j in range(i + 1, n):
            dots(X, i, X, j, G)
            for b in range(L):
                w = exp1(beta[b] * (G[b] - c))
                Z[i, b] += w
                Z[j, b] += w
                Wt[b] = w
                count[b] += twice * (G[b] > eps1[b])
            for k in range(d):
                for b in range(L):
                    V[i, k, b] += Wt[b] * X[j, k, b]
                    V[j, k, b] += Wt[b] * X[i, k, b]


@jit_fma_inline
def pair_sums_circle(X, b, beta, c, V, Z, e1, step):
    """pair_sums_loops' Z and V for d = 2 and the WIDTH lanes from b, the same numbers, in
    f64x4 values (simd.py): token i's position and sums held in registers across its pairs;
    beta, e1, step: f64x4. Returns step summed over the ordered pairs i != j with
    g_ij > e1, lane by lane."""
    n = X.shape[0]
    zero, cc, close = v.splat(0.0), v.splat(c), v.splat(0.0)
    for i in range(n):
        v.store(Z, (i, b), zero)
        v.store(V, (i, 0, b), zero)
        v.store(V, (i, 1, b), zero)
    for i in range(n):
        xi0, xi1 = v.load(X, (i, 0, b)), v.load(X, (i, 1, b))
        w = exp4(beta * (v.fma(xi1, xi1, xi0 * xi0) - cc))
        zi = v.load(Z, (i, b)) + w
        vi0 = v.fma(w, xi0, v.load(V, (i, 0, b)))
        vi1 = v.fma(w, xi1, v.load(V, (i, 1, b)))
        for j in range(i + 1, n):
            xj0, xj1 = v.load(X, (j, 0, b)), v.load(X, (j, 1, b))
            g = v.fma(xi1, xj1, xi0 * xj0)
            w = exp4(beta * (g - cc))
            zi = zi + w
            v.store(Z, (j, b), v.load(Z, (j, b)) + w)
            close = v.add_where_greater(close, g, e1, step)
            vi0 = v.fma(w, xj0, vi0)
            vi1 = v.fma(w, xj1, vi1)
            v.store(V, (j, 0, b), v.fma(w, xi0, v.load(V, (j, 0, b))))
            v.store(V, (j, 1, b), v.fma(w, xi1, v.load(V, (j, 1, b))))
        v.store(Z, (i, b), zi)
        v.store(V, (i, 0, b), vi0)
        v.store(V, (i, 1, b), vi1)
    return close


@jit_fma_inline
def pair_sums_sphere(X, b, beta, c, V, Z, e1, step):
    """pair_sums_circle for d = 3."""
    n = X.shape[0]
    zero, cc, close = v.splat(0.0), v.splat(c), v.splat(0.0)
    for i in range(n):
        v.store(Z, (i, b), zero)
        for k in range(3):
            v.store(V, (i, k, b), zero)
    for i in range(n):
        xi0, xi1, xi2 = v.load(X, (i, 0, b)), v.load(X, (i, 1, b)), v.load(X, (i, 2, b))
        w = exp4(beta * (v.fma(xi2, xi2, v.fma(xi1, xi1, xi0 * xi0)) - cc))
        zi = v.load(Z, (i, b)) + w
        vi0 = v.fma(w, xi0, v.load(V, (i, 0, b)))
        vi1 = v.fma(w, xi1, v.load(V, (i, 1, b)))
        vi2 = v.fma(w, xi2, v.load(V, (i, 2, b)))
        for j in range(i + 1, n):
            xj0, xj1, xj2 = v.load(X, (j, 0, b)), v.load(X, (j, 1, b)), v.load(X, (j, 2, b))
            g = v.fma(xi2, xj2, v.fma(xi1, xj1, xi0 * xj0))
            w = exp4(beta * (g - cc))
            zi = zi + w
            v.store(Z, (j, b), v.load(Z, (j, b)) + w)
            close = v.add_where_greater(close, g, e1, step)
            vi0, vi1, vi2 = v.fma(w, xj0, vi0), v.fma(w, xj1, vi1), v.fma(w, xj2, vi2)
            v.store(V, (j, 0, b), v.fma(w, xi0, v.load(V, (j, 0, b))))
            v.store(V, (j, 1, b), v.fma(w, xi1, v.load(V, (j, 1, b))))
            v.store(V, (j, 2, b), v.fma(w, xi2, v.load(V, (j, 2, b))))
        v.store(Z, (i, b), zi)
        v.store(V, (i, 0, b), vi0)
        v.store(V, (i, 1, b), vi1)
        v.store(V, (i, 2, b), vi2)
    return close


@jit_fma
def velocity(X, beta, c, softmax, method, V, Z, G, Wt, count, eps1, counting):
    """V = P_x(v), v_i = sum_j w_ij x_j / z_i (v itself for the layer method), every lane;
    X, V: [n, d, L], L a multiple of simd.WIDTH; Z: [n, L] scratch; G, Wt: [L] scratch;
    beta, eps1: [L]. counting: add to count[b] the ordered pairs i != j with g_ij > eps1[b]
    (= 1 - eps)."""
    n, d, L = X.shape
    if d == 2 or d == 3:  # the common cases in registers; above, the loops keep up
        step = v.splat(2.0 if counting else 0.0)  # each close pair: (i, j) and (j, i)
        for b in range(0, L, v.WIDTH):
            lanes_beta, e1 = v.load(beta, b), v.load(eps1, b)
            if d == 2:
                close = pair_sums_circle(X, b, lanes_beta, c, V, Z, e1, step)
            else:
                close = pair_sums_sphere(X, b, lanes_beta, c, V, Z, e1, step)
            for q in range(v.WIDTH):
                count[b + q] += int(v.lane(close, q))
    else:
        pair_sums_loops(X, beta, c, V, Z, G, Wt, count, eps1, counting)
    for i in range(n):
        for b in range(L):
            Z[i, b] = 1.0 / Z[i, b] if softmax else 1.0 / n
        for k in range(d):
            for b in range(L):
                V[i, k, b] *= Z[i, b]
        if method == LAYER:
            continue
        dots(X, i, V, i, G)  # the tangent projection u - <x_i, u> x_i
        for k in range(d):
            for b in range(L):
                V[i, k, b] -= G[b] * X[i, k, b]


@jit_fma
def count_close(X, eps1, G, count):
    """count[b] = the ordered pairs i != j of lane b with g_ij > eps1[b], from the very g_ij
    velocity computes."""
    n, d, L = X.shape
    count[:] = 0
    for i in range(n):
        for j in range(i + 1, n):
            dots(X, i, X, j, G)
            for b in range(L):
                count[b] += 2 * (G[b] > eps1[b])


@jit_fma
def axpy(out, x, a, y):
    """out = x + a y, a: [L] one factor per lane; [n, d, L] arrays."""
    n, d, L = x.shape
    for i in range(n):
        for k in range(d):
            for b in range(L):
                out[i, k, b] = x[i, k, b] + a[b] * y[i, k, b]


@jit_fma
def step(X, beta, c, softmax, method, dt, half, sixth, ws, Z, G, Wt, count, eps1, counting):
    """One euler, layer or rk4 step of every lane in place, then renormalisation; dt, half,
    sixth: [L] (dt, dt / 2, dt / 6); ws: [5, n, d, L] scratch."""
    n, d, L = X.shape
    k1, k2, k3, k4, y = ws[0], ws[1], ws[2], ws[3], ws[4]
    velocity(X, beta, c, softmax, method, k1, Z, G, Wt, count, eps1, counting)
    if method == RK4:
        axpy(y, X, half, k1)
        velocity(y, beta, c, softmax, method, k2, Z, G, Wt, count, eps1, False)
        axpy(y, X, half, k2)
        velocity(y, beta, c, softmax, method, k3, Z, G, Wt, count, eps1, False)
        axpy(y, X, dt, k3)
        velocity(y, beta, c, softmax, method, k4, Z, G, Wt, count, eps1, False)
        for i in range(n):
            for k in range(d):
                for b in range(L):
                    X[i, k, b] += sixth[b] * (k1[i, k, b] + 2.0 * k2[i, k, b]
                                              + 2.0 * k3[i, k, b] + k4[i, k, b])
    else:
        axpy(X, X, dt, k1)
    for i in range(n):
        dots(X, i, X, i, G)
        for b in range(L):
            G[b] = 1.0 / np.sqrt(G[b])
        for k in range(d):
            for b in range(L):
                X[i, k, b] *= G[b]


@jit_fma
def velocity_columns(xt, beta, c, softmax, method, vt, z, g, w, eps1, counting):
    """velocity's numbers for one system, xt, vt: [d, n] (a lane of X, transposed), bit for
    bit: column j of the weights at a time, every loop over the tokens i (vectorised). Each
    g_ij is velocity's (the same products summed in the same order: x_ik x_jk = x_jk x_ik),
    each token's sums again in the order j = 0, 1, ...; n^2 exponentials instead of
    n (n + 1) / 2, for a block too small to fill the lanes. Returns the ordered close pairs
    i != j (0 unless counting)."""
    d, n = xt.shape
    z[:] = 0.0
    vt[:] = 0.0
    close = 0
    for j in range(n):
        for i in range(n):
            g[i] = xt[0, i] * xt[0, j]
        for k in range(1, d):
            for i in range(n):
                g[i] += xt[k, i] * xt[k, j]
        if counting:
            for i in range(n):
                close += g[i] > eps1
            close -= g[j] > eps1
        for i in range(n):
            w[i] = exp1(beta * (g[i] - c))
            z[i] += w[i]
        for k in range(d):
            for i in range(n):
                vt[k, i] += w[i] * xt[k, j]
    for i in range(n):
        z[i] = 1.0 / z[i] if softmax else 1.0 / n
    for k in range(d):
        for i in range(n):
            vt[k, i] *= z[i]
    if method != LAYER:
        for i in range(n):
            g[i] = xt[0, i] * vt[0, i]
        for k in range(1, d):
            for i in range(n):
                g[i] += xt[k, i] * vt[k, i]
        for k in range(d):
            for i in range(n):
                vt[k, i] -= g[i] * xt[k, i]
    return close


@jit_fma
def step_columns(X, beta, c, softmax, method, dt, ws, z, g, w, eps1, counting):
    """step's numbers for a block of one lane, X: [n, d, 1], through velocity_columns;
    ws: [6, d, n] scratch. Returns the save's close pairs (0 unless counting)."""
    n, d = X.shape[0], X.shape[1]
    xt, k1, k2, k3, k4, y = ws[0], ws[1], ws[2], ws[3], ws[4], ws[5]
    for i in range(n):
        for k in range(d):
            xt[k, i] = X[i, k, 0]
    close = velocity_columns(xt, beta, c, softmax, method, k1, z, g, w, eps1, counting)
    if method == RK4:
        half = 0.5 * dt
        for k in range(d):
            for i in range(n):
                y[k, i] = xt[k, i] + half * k1[k, i]
        velocity_columns(y, beta, c, softmax, method, k2, z, g, w, eps1, False)
        for k in range(d):
            for i in range(n):
                y[k, i] = xt[k, i] + half * k2[k, i]
        velocity_columns(y, beta, c, softmax, method, k3, z, g, w, eps1, False)
        for k in range(d):
            for i in range(n):
                y[k, i] = xt[k, i] + dt * k3[k, i]
        velocity_columns(y, beta, c, softmax, method, k4, z, g, w, eps1, False)
        sixth = dt / 6.0
        for k in range(d):
            for i in range(n):
                xt[k, i] += sixth * (k1[k, i] + 2.0 * k2[k, i] + 2.0 * k3[k, i] + k4[k, i])
    else:
        for k in range(d):
            for i in range(n):
                xt[k, i] = xt[k, i] + dt * k1[k, i]
    for i in range(n):
        g[i] = xt[0, i] * xt[0, i]
    for k in range(1, d):
        for i in range(n):
            g[i] += xt[k, i] * xt[k, i]
    for i in range(n):
        g[i] = 1.0 / np.sqrt(g[i])
    for i in range(n):
        for k in range(d):
            X[i, k, 0] = xt[k, i] * g[i]
    return close


@jit_fma
def round32(X):
    """X <- X rounded to float32 (a float32 system's state after every step)."""
    n, d, L = X.shape
    for i in range(n):
        for k in range(d):
            for b in range(L):
                X[i, k, b] = np.float32(X[i, k, b])


@jit_fma
def finite_lanes(X, t):
    """t[b] = 0 where lane b is finite, else NaN (x * 0 is NaN for inf and NaN, exactly 0 for
    the rest: a sum instead of a branch per number)."""
    n, d, L = X.shape
    t[:] = 0.0
    for i in range(n):
        for k in range(d):
            for b in range(L):
                t[b] += X[i, k, b] * 0.0


@jit
def order_lanes(X, m, r):
    """r[b] = |(1/n) sum_i x_i| of lane b, as summary.order_parameter computes it (compiled,
    as it is, without contraction: the same bits); m: [L] scratch."""
    n, d, L = X.shape
    r[:] = 0.0
    for k in range(d):
        m[:] = 0.0
        for i in range(n):
            for b in range(L):
                m[b] += X[i, k, b]
        for b in range(L):
            q = m[b] / n
            r[b] += q * q
    for b in range(L):
        r[b] = np.sqrt(r[b])


@jit
def copy_lane(X, b, x):
    """x <- lane b of X (rounded to x's dtype)."""
    for i in range(x.shape[0]):
        for k in range(x.shape[1]):
            x[i, k] = X[i, k, b]


@jit_fma
def lane_gram(X, b, g):
    """g[i, j] = g_ij of lane b, as velocity computes it (so exactly symmetric)."""
    n, d = X.shape[0], X.shape[1]
    for i in range(n):
        for j in range(i, n):
            s = X[i, 0, b] * X[j, 0, b]
            for k in range(1, d):
                s += X[i, k, b] * X[j, k, b]
            g[i, j] = s
            g[j, i] = s


@jit_fma
def integrate_lanes(xs, betas, softmax, method, dts, save_stride, epss, obs, traj, stop,
                    status, recorded, level):
    """rows.integrate_rows_batch's arguments and results, the systems in blocks of up to
    LANES lanes (blocks of near-equal size, each padded to a multiple of simd.WIDTH),
    each block stepped to the end before the next; recorded: [B] int64, the saves each
    system recorded. One compiled function for the whole loop: each level of jitted calls
    recompiles the code under it, and a block's own function cost 10 s of compile time."""
    B, n, d = xs.shape
    c = 1.0 if softmax else 0.0
    blocks = -(-B // LANES) if B >= LANES_MIN else B  # too few to fill lanes: one by one
    for blk in range(blocks):
        lo, hi = blk * B // blocks, (blk + 1) * B // blocks
        L = hi - lo
        columns = L < LANES_MIN
        # P lanes, the last system repeated up to a multiple of the vector width (the
        # extra lanes' numbers are never read)
        P = L if columns else -(-L // v.WIDTH) * v.WIDTH
        status[lo:hi] = OK
        recorded[lo:hi] = 0
        X, bs, ts, es = np.empty((n, d, P)), np.empty(P), np.empty(P), np.empty(P)
        for b in range(P):
            src = lo + min(b, L - 1)
            bs[b], ts[b], es[b] = betas[src], dts[src], epss[src]
            for i in range(n):
                for k in range(d):
                    X[i, k, b] = xs[src, i, k]
        ws = np.empty((5 if method == RK4 else 1, n, d, P) if not columns else (0, n, d, P))
        wc = np.empty((6, d, n) if columns else (0, d, n))
        zc, gc, wv = np.empty(n), np.empty(n), np.empty(n)
        Z, G, Wt = np.empty((n, P)), np.empty(P), np.empty(P)
        count = np.zeros(P, dtype=np.int64)
        eps1, half, sixth = 1.0 - es, 0.5 * ts, ts / 6.0
        alive = np.ones(P, dtype=np.bool_)
        t, m, r = np.empty(P), np.empty(P), np.empty(P)
        g, e, rows, acc = np.empty((n, n)), np.empty((n, n)), np.empty((n, 6)), np.empty((4, n))
        parent, grp = np.empty(n, dtype=np.int64), groups_scratch(n, d)
        single, pairs = xs.itemsize == 4, n * (n - 1)
        for s in range(obs.shape[1]):
            if s > 0:
                for k in range(save_stride):
                    if stop[0] != 0:
                        return STOPPED
                    counting = k == 0 and level == SAVE_CLOSE
                    if counting:
                        count[:] = 0
                    if columns:
                        count[0] = step_columns(X, bs[0], c, softmax, method, ts[0], wc, zc,
                                                gc, wv, eps1[0], counting)
                    else:
                        step(X, bs, c, softmax, method, ts, half, sixth, ws, Z, G, Wt, count,
                             eps1, counting)
                    if single:
                        round32(X)
                    if counting:  # the close pairs of the save before this step
                        for b in range(L):
                            if alive[b]:
                                obs[lo + b, s - 1, 3] = count[b] / pairs if n > 1 else np.nan
            finite_lanes(X, t)
            if level == SAVE_CLOSE:
                order_lanes(X, m, r)
            for b in range(L):
                if not alive[b]:
                    continue
                x = xs[lo + b]
                if t[b] != 0.0:  # not finite: the run ends here, x as it is
                    copy_lane(X, b, x)
                    alive[b], status[lo + b] = False, NONFINITE
                    continue
                recorded[lo + b] = s + 1
                out = obs[lo + b, s]
                if level == SAVE_CLOSE:
                    out[0] = r[b]
                else:
                    copy_lane(X, b, x)
                    lane_gram(X, b, g)
                    if level == SAVE_ALL:
                        for i in range(n):
                            for j in range(n):
                                e[i, j] = exp1(bs[b] * (g[i, j] - c))
                        observe_weighted(x, g, e, bs[b], c, es[b], out, rows, acc, parent,
                                         grp)
                    else:
                        observe_pairs(x, g, es[b], level, out, rows, acc, parent)
                if traj.shape[1] > 0:
                    copy_lane(X, b, x)
                    traj[lo + b, s] = x
            if stop[0] != 0:
                return STOPPED
        for b in range(L):
            if alive[b]:
                copy_lane(X, b, xs[lo + b])
        if level == SAVE_CLOSE:
            count_close(X, eps1, G, count)
            for b in range(L):
                if alive[b]:
                    obs[lo + b, obs.shape[1] - 1, 3] = count[b] / pairs if n > 1 else np.nan
    return OK
