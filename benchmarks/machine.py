"""The machine a benchmark ran on, recorded beside its numbers (`identity`) and named in one
line (`label`): every ratio to a ceiling or to a peer moves with the processor. The same code
on two 2-core AMD EPYC machines of this project ran BLAS's gemm, the kernels and NumPy at
rates in other proportions, and moved the targets' ratios both ways (benchmarks/HISTORY.md,
"One code, two processors"): a number says little without the machine it came from.
"""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np

ISA = ("avx2", "fma", "avx512f")  # the instruction sets the kernels and BLAS pick from


def cpuinfo(text: str | None = None) -> dict:
    """The first processor's model name, family, model and the ISA flags among ISA, from
    /proc/cpuinfo (or `text`); '?' and no flags where there is none (not Linux)."""
    if text is None:
        path = Path("/proc/cpuinfo")
        text = path.read_text() if path.exists() else ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break  # the first processor only
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    return {"cpu": fields.get("model name", platform.processor() or "?"),
            "cpu_family": fields.get("cpu family", "?"), "cpu_model": fields.get("model", "?"),
            "isa": [f for f in ISA if f in flags]}


def blas() -> dict:
    """The BLAS NumPy calls: its library, version and the kernels it chose for this CPU."""
    from threadpoolctl import threadpool_info

    info = next((i for i in threadpool_info() if i.get("user_api") == "blas"), {})
    return {key: info.get(key, "?") for key in ("internal_api", "version", "architecture")}


def identity() -> dict:
    from sweep.execution.resources import available_cpus  # the CPUs a run counts

    return {**cpuinfo(), "cores": available_cpus(), "blas": blas(),
            "platform": platform.platform(), "python": platform.python_version(),
            "numpy": np.__version__}


def label(m: dict) -> str:
    """'AMD EPYC (family 25, model 17; avx2 fma avx512f), OpenBLAS 0.3.31 (SkylakeX kernels)'."""
    b = m.get("blas", {})
    library = {"openblas": "OpenBLAS", "mkl": "MKL", "blis": "BLIS"}.get(
        b.get("internal_api"), b.get("internal_api", "?"))
    return (f"{m['cpu']} (family {m['cpu_family']}, model {m['cpu_model']}; "
            f"{' '.join(m['isa']) or 'no AVX'}), {library} {b.get('version', '?')} "
            f"({b.get('architecture', '?')} kernels)")
