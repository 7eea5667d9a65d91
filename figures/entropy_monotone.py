"""The sidecar figures/entropy-monotone.json and the table of docs/analysis.md it makes: in
how many runs of configs/entropy-monotone.yaml the attention entropy ever fell, per start and
dimension, and by how much at worst.

    python figures/entropy_monotone.py MONOTONE.nc OUT.json [--docs DOC.md]

MONOTONE.nc is `sweep monotone RESULTS --var attention_entropy -o MONOTONE.nc` of the
config's results. --docs rewrites the table between the markers BEGIN and END in DOC.md;
tests/test_monotone.py checks the committed table is the one the committed sidecar makes.
"""

import json
import sys
from pathlib import Path

import xarray as xr
import yaml

from sweep.analysis.monotonicity import runs_that_fell

BEGIN = "<!-- entropy-monotone table: made by figures/entropy_monotone.py, do not edit -->"
END = "<!-- end of entropy-monotone table -->"


def numbers(result) -> dict:
    """What the table shows, for the sidecar."""
    cfg = yaml.safe_load(result.attrs["sweep_config"])
    rows = []
    for row in runs_that_fell(result, by="d"):
        kind = str(result.kind.sel(d=row["value"]).item())
        rows.append({"kind": kind, "d": int(row["value"]), "fell": row["fell"],
                     "runs": row["runs"], "worst_fall": float(f"{row['worst_fall']:.2g}")})
    integ = cfg["integrate"]
    return {"config": "configs/entropy-monotone.yaml", "var": result.attrs["var"],
            "rtol": result.attrs["rtol"], "n": cfg["model"]["n"], "method": integ["method"],
            "dt": integ["dt"], "t_max": integ["t_max"], "save_every": integ["save_every"],
            "betas": [float(b) for b in result.beta.values], "seeds": int(result.sizes["seed"]),
            "rows": rows}


def table(facts: dict) -> str:
    """The markdown table, markers included."""
    lines = [BEGIN, "", "| start | d | runs in which the entropy fell | worst relative fall |",
             "|---|---|---|---|"]
    for row in facts["rows"]:
        start = ("orthonormal (the exact equiangular solution)" if row["kind"] == "orthonormal"
                 else row["kind"])
        worst = f"{row['worst_fall']:.2g}" if row["fell"] else "-"
        lines.append(f"| {start} | {row['d']} | {row['fell']} of {row['runs']} | {worst} |")
    return "\n".join(lines + ["", END])


def insert(doc: Path, text: str) -> None:
    """Replace the table between the markers in doc."""
    old = doc.read_text()
    head, begin, rest = old.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not (begin and end):
        raise SystemExit(f"{doc}: no table markers ({BEGIN} ... {END})")
    doc.write_text(head + text + tail)


if __name__ == "__main__":
    monotone_path, sidecar = sys.argv[1], Path(sys.argv[2])
    with xr.open_dataset(monotone_path) as ds:
        facts = numbers(ds.load())
    sidecar.write_text(json.dumps(facts, indent=2) + "\n")
    if "--docs" in sys.argv:
        insert(Path(sys.argv[sys.argv.index("--docs") + 1]), table(facts))
