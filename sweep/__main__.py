"""The `sweep` command and `python -m sweep` (array tasks run it so, with the interpreter
that submitted them).

Ctrl-C is caught here, before anything heavy is imported: importing the command line (Typer,
Rich, NumPy, Numba) takes most of the first second, and a KeyboardInterrupt raised while it
does would otherwise end in a traceback instead of exit 130 and one line.

The command also spares every run Numba's probe for BLAS (`NoBlasProbe`) and, where its
kernels are cached, Numba's set-up for compiling (`LoadsOnly`).
"""

import importlib.abc
import importlib.machinery
import sys

TYPING, PROBED = "numba.np.arraymath", "scipy.linalg.cython_blas"
CACHING = "numba.core.caching"


class NoBlasProbe(importlib.abc.MetaPathFinder):
    """Numba's typing of NumPy (numba.np.arraymath, loaded at the first compile or cache load
    of a kernel) imports scipy.linalg.cython_blas to see whether np.dot can be compiled:
    0.2-0.3 s of every run wherever scipy is installed, for nothing, as no kernel calls BLAS
    from compiled code (blocked.py calls NumPy's matmul from Python). While that one module
    loads, the probe's target is marked missing, so Numba takes BLAS as absent; only in this
    command's process (a notebook importing sweep keeps Numba's np.dot), and scipy itself
    imports as usual afterwards."""

    def find_spec(self, name, path=None, target=None):
        if name != TYPING:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and PROBED not in sys.modules:
            spec.loader = _Hiding(spec.loader)
        return spec


class _Hiding(importlib.abc.Loader):
    """A loader that runs another with PROBED marked missing in sys.modules."""

    def __init__(self, loader):
        self.loader = loader

    def __getattr__(self, name):  # get_source, get_filename, ...: the wrapped loader's
        return getattr(self.loader, name)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        sys.modules[PROBED] = None  # import raises ModuleNotFoundError, nothing is loaded
        try:
            self.loader.exec_module(module)
        finally:
            if sys.modules.get(PROBED, 0) is None:
                del sys.modules[PROBED]


class LoadsOnly(importlib.abc.MetaPathFinder):
    """Numba refreshes its compiler's context (imports and installs the implementations of
    every Python and NumPy feature it compiles: 0.2-0.3 s) before it loads a cached kernel,
    which needs none of them, only Numba's runtime for the arrays the kernel allocates.
    Once numba.core.caching is loaded, its loads start that runtime alone; a compile still
    refreshes the context first (Numba's compiler does, whatever loaded before). Only in this
    command's process, as NoBlasProbe."""

    def find_spec(self, name, path=None, target=None):
        if name != CACHING:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            spec.loader = _Then(spec.loader, _loads_only)
        return spec


def _loads_only(caching) -> None:
    from numba.core.runtime import rtsys

    def load_overload(self, sig, target_context):
        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    caching.Cache.load_overload = load_overload


class _Then(importlib.abc.Loader):
    """A loader that runs another, then then(module)."""

    def __init__(self, loader, then):
        self.loader, self.then = loader, then

    def __getattr__(self, name):
        return getattr(self.loader, name)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.then(module)


def main() -> None:
    try:
        if TYPING not in sys.modules:
            sys.meta_path.insert(0, NoBlasProbe())
        if CACHING not in sys.modules:
            sys.meta_path.insert(0, LoadsOnly())
        from sweep.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)


if __name__ == "__main__":
    main()
