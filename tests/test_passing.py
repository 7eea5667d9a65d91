"""numerics/passing.py: a kernel that calls a function passed by address holds none of its
code, computes what a direct call computes, and raises what it raises; the batched paths take
their saves' functions so."""

import numba
import numpy as np
import pytest
from numba import typeof, types

from sweep.execution.kernel import STRATEGIES, KernelPlan
from sweep.execution.simulate import PATHS
from sweep.kernels.lanes import integrate_lanes
from sweep.kernels.rows import integrate_rows_batch
from sweep.numerics.passing import Passing, function_type
from sweep.observables.gramobs import observe_pairs, observe_weighted, saves


@numba.njit
def _callee(x, out):
    if x[0] < 0.0:
        raise ValueError("negative")
    s = 0.0
    for v in x:
        s += np.sin(v) * np.cos(v)
    out[0] = s


@numba.njit
def _kernel(x, out, f):
    f(x, out)
    return out[0] * 2.0


@numba.njit
def _direct(x, out):
    _callee(x, out)
    return out[0] * 2.0


_FTYPE = function_type(typeof(np.empty(1)), typeof(np.empty(1)))
_passing = Passing(_kernel, lambda args: ((_callee, _FTYPE),))


def test_a_passed_function_is_called_by_address_and_gives_a_direct_calls_result():
    x, out = np.linspace(0.0, 1.0, 50), np.zeros(1)
    assert _passing(x, out) == _direct(x, np.zeros(1))
    (sig,) = _kernel.signatures
    assert sig[-1] == _FTYPE
    # the callee's code (its sin) is not in the kernel's module; a direct call links it in
    assert "@llvm.sin" not in _kernel.inspect_llvm(sig)
    assert "@llvm.sin" in _direct.inspect_llvm(_direct.signatures[0])


def test_an_error_in_a_passed_function_reaches_the_caller():
    with pytest.raises(ValueError, match="negative"):
        _passing(np.array([-1.0, 2.0]), np.zeros(1))


def test_compile_alone_compiles_the_kernel_not_what_it_is_passed():
    @numba.njit
    def callee(x, out):
        out[0] = x[0]

    @numba.njit
    def kernel(x, out, f):
        f(x, out)

    passing = Passing(kernel, lambda args: ((callee, _FTYPE),))
    passing.compile(np.zeros(1), np.zeros(1))
    assert len(kernel.signatures) == 1 and not callee.signatures
    passing(np.ones(1), out := np.zeros(1))
    assert out[0] == 1.0 and len(kernel.signatures) == 1


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_saves_types_are_those_of_their_calls(dtype):
    (weighted, wtype), (pairs, ptype) = saves(np.dtype(dtype))
    assert (weighted, pairs) == (observe_weighted, observe_pairs)
    x = wtype.signature.args[0]
    assert (x.dtype, x.ndim, x.layout) == (getattr(types, dtype), 2, "C")
    assert all(getattr(t, "layout", "C") == "C" for t in wtype.signature.args)
    assert saves(np.dtype(dtype)) is saves(np.dtype(dtype))  # built once per dtype


@pytest.mark.parametrize("path, passing", [("lanes", integrate_lanes),
                                           ("rows", integrate_rows_batch)])
def test_the_batched_kernels_are_compiled_with_their_saves_passed(path, passing):
    PATHS[STRATEGIES[path]].warm(KernelPlan(STRATEGIES[path], "float64"))
    assert passing.kernel.signatures
    for sig in passing.kernel.signatures:
        passed = [t for _, t in saves(np.dtype(str(sig[0].dtype)))]
        assert [t for t in sig if isinstance(t, types.FunctionType)] == passed
