"""sweep: phase-diagram sweeper for self-attention particle dynamics on the sphere.

    import sweep
    cfg = sweep.load("configs/demo.yaml")      # or a dict; overrides=["model.n=16"]
    sweep.plan(cfg)                            # jobs, axes, cost
    ds = sweep.run(cfg)                        # an xarray.Dataset, also written to disk
    th = sweep.threshold(ds, "clustered_fraction", along="time")
    sweep.plot(ds, "clustered_fraction", "demo.png", x="beta", y="time", threshold=th)

The names below come from sweep.api (and sweep.theory is sweep.analysis.theory); they are
imported on first use, so `import sweep` costs milliseconds and imports no Numba, xarray
or matplotlib. Errors: sweep.errors. Walk-through: docs/python.md.
"""

from sweep._version import __version__

_API = ("load", "plan", "run", "execute", "merge", "compile_kernels", "status", "submit",
        "open_results", "threshold", "refine", "monotone", "plateaus", "plot", "probe", "extract",
        "train",
        "store", "Plan", "Outcome", "Status", "Submission")
# former names, kept for one release: they warn and give the new function
_RENAMED = {"open": "open_results", "compile": "compile_kernels"}
__all__ = [*_API, "theory", "errors", "__version__"]


def __getattr__(name: str):
    if name in _API:
        from sweep import api

        return getattr(api, name)
    if name in _RENAMED:
        import warnings

        warnings.warn(f"sweep.{name} is deprecated: use sweep.{_RENAMED[name]}",
                      DeprecationWarning, stacklevel=2)
        from sweep import api

        return getattr(api, _RENAMED[name])
    if name == "theory":
        from sweep.analysis import theory

        return theory
    if name == "errors":
        from sweep import errors

        return errors
    raise AttributeError(f"module 'sweep' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
