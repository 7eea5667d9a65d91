"""Compiled functions handed to a kernel by address, so that the kernel calls them and holds
no copy of their code.

Numba links the code of every jitted function a kernel calls into the kernel's own module, and
optimises and compiles the whole to machine code again: a function that several kernels call
is compiled once on its own and once more inside each of them. A function passed as an
argument of Numba's first-class function type (numba.types.FunctionType) is called through the
address it arrives with instead (Numba's own calling convention, so its errors propagate as a
direct call's), and the kernel's code holds only the call: compiled once, it serves every
kernel. Such a kernel still caches, since its code names no address.

`Passing` calls a kernel so: kernel(*args, *functions), compiled (or loaded from the cache) for
the types of args and each function's first-class type. A plain call would type each function
as itself and compile a kernel that links it.
"""

from __future__ import annotations

from collections.abc import Callable

from numba import typeof, types


class Passing:
    """Called with args, calls kernel(*args, *functions): functions(args) -> ((function,
    ftype), ...) gives the jitted functions passed after args, each with the FunctionType of
    the kernel's call of it, exactly (a wider one, an array of layout A where the kernel
    passes C, would compile another function than a direct call compiles, with other
    bits)."""

    def __init__(self, kernel, functions: Callable[[tuple], tuple]):
        self.kernel, self.functions = kernel, functions
        self._entries: dict[tuple, Callable] = {}

    def __call__(self, *args):
        passed = self.functions(args)
        return self._entry(args, passed)(*args, *(function for function, _ in passed))

    def compile(self, *args) -> None:
        """Compile (or load) the kernel for args, not the functions it is passed."""
        self._entry(args, self.functions(args))

    def _entry(self, args: tuple, passed: tuple) -> Callable:
        key = tuple(typeof(a) for a in args) + tuple(ftype for _, ftype in passed)
        entry = self._entries.get(key)
        if entry is None:  # compiled for these types, or loaded from the cache
            entry = self._entries[key] = self.kernel.compile(key)
        return entry


def function_type(*argtypes) -> types.FunctionType:
    """The first-class type of a function of these argument types that returns nothing."""
    return types.FunctionType(types.none(*argtypes))
