"""The one place that sets Numba's compilation options.

`cache=True` so a warm start costs milliseconds; `nogil=True` so many jobs can run on threads
at once; `error_model="numpy"` so a division by zero gives inf/nan instead of raising (a
blow-up is a result, reported through `status`); no fastmath, because the kernels are checked
against a NumPy reference to 1e-12 and fastmath reorders sums.
"""

import numba

OPTIONS = dict(cache=True, nogil=True, error_model="numpy", fastmath=False)

jit = numba.njit(**OPTIONS)

# The fast kernels (rows.py, blocked.py, expfast.py) let LLVM reassociate sums and fuse
# multiply-adds so reductions over tokens vectorise. That changes the rounding of a sum of n
# terms by ~n ulp, far inside the 1e-12 agreement with the reference; nnan/ninf stay off, so
# blow-ups are still detected.
FAST_OPTIONS = dict(OPTIONS, fastmath={"reassoc", "contract", "nsz", "arcp"})

jit_fast = numba.njit(**FAST_OPTIONS)

# Fused multiply-adds alone, for expfast.py (its rounding trick survives contraction, an FMA
# rounding once where a multiply and an add round twice, but not reassociation) and for loops
# that vectorise without it: reassociation lets LLVM order a sum one way when a kernel is
# compiled in the process and another in the copy it caches (seen in fast.gram), and a
# resumed run must give the bits of a clean one (tests/test_fast.py checks fresh vs cached).
jit_fma = numba.njit(**dict(OPTIONS, fastmath={"contract"}))

# Inlined into its callers by Numba itself: for a small helper called per token inside a loop
# (an ordinary call passes each array with an atomic reference count up and down, which for a
# few dozen flops costs more than the flops: groups.against_groups at n = 32), and for
# kernels/timeloop.run, so each path's integrate gets its own copy of the loop as if written
# there (a separately compiled loop cost the general path time).
jit_inline = numba.njit(**OPTIONS, inline="always")

# The same for a fast path's own helpers that run once per save (rows._advance, _record):
# inlined, their system's arrays are taken out of its tuple once per run, not once per call.
jit_fast_inline = numba.njit(**FAST_OPTIONS, inline="always")

# The same for lanes.py's per-pair helpers, compiled as their callers (fused multiply-adds only).
jit_fma_inline = numba.njit(**dict(OPTIONS, fastmath={"contract"}), inline="always")
