"""The Python API: what `import sweep` gives, and what every `sweep` command calls.

    cfg = sweep.load("configs/demo.yaml", overrides=["grid.seed={range: [0, 2]}"])
    plan = sweep.plan(cfg)              # jobs, axes, cost; nothing runs
    ds = sweep.run(cfg)                 # the files and bits of `sweep run`
    th = sweep.threshold(ds, "clustered_fraction", along="time")
    sweep.plot(ds, "clustered_fraction", "demo.png", x="beta", y="time", threshold=th)

One module per module of sweep/cli, each the library behind that module's commands:
sweeping (load, plan, run, merge), refining (refine), scheduling (status, submit,
compile_kernels), analysis (open_results, threshold, monotone, plateaus, plot, theory), models
(probe, extract), training (load_training, train). A command only parses its options and
prints what comes back.
Errors are the exceptions of sweep.errors, whose message is the line the command prints.
The pieces (a config, its jobs, its store) are made here from the config, never passed in
separately, so a script cannot pair results with the wrong config. Loading and planning
import neither Numba nor xarray; running and analysing import them when called.
"""

from sweep.api.analysis import monotone, open_results, plateaus, plot, theory, threshold
from sweep.api.models import extract, probe
from sweep.api.refining import Refinement, refine, refine_rounds
from sweep.api.scheduling import Status, Submission, compile_kernels, status, submit
from sweep.api.sweeping import Outcome, Plan, execute, load, merge, plan, preflight, run, store
from sweep.api.training import load_training, train

__all__ = ["Outcome", "Plan", "Status", "Submission", "compile_kernels", "execute", "extract",
           "load", "load_training", "merge", "monotone", "open_results", "plan", "plateaus",
           "plot", "preflight", "probe", "refine", "refine_rounds", "Refinement", "run", "status",
           "store", "submit", "theory", "threshold", "train"]
