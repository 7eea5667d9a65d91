"""Draw figures/layers.png and write its numbers (figures/layers.json) and the table in
docs/layers.md: all-MiniLM-L6-v2 as a layer model, per layer, with each component switched
off, with trained and norm-matched Gaussian matrices, beside the identity-weight baseline.

    python figures/layers.py LAYERS.nc IDENTITY.nc OUT.png [--docs docs/layers.md]

LAYERS.nc is `sweep run configs/minilm-layers.yaml` (dimensions weights x components x seed
x layer), IDENTITY.nc `sweep run configs/minilm-identity.yaml`. The JSON sidecar holds every
number drawn; the docs table is rendered from it (tests/test_layers_docs.py checks that the
committed table is the sidecar's).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import xarray as xr

VARIABLES = ("mean_cosine", "n_groups", "largest_cluster", "overlap_gap", "inter_attention",
             "n_clusters", "token_norm")
SHOWN = VARIABLES[:5]  # the figure's rows
WEIGHTS = ("trained", "norm-matched Gaussian")  # the folder's index.json, index-gaussian.json
BEGIN, END = "<!-- begin: figures/layers.json -->", "<!-- end: figures/layers.json -->"


def numbers(layers: xr.Dataset, identity: xr.Dataset) -> dict:
    """{var: {weights: {component: [per layer]}, "identity": [per layer]}} and the setup."""
    import yaml

    cfg = yaml.safe_load(layers.attrs["sweep_config"])
    out = {"cluster_eps": cfg["integrate"]["cluster_eps"], "n": cfg["model"]["n"],
           "variables": {}}
    which = {WEIGHTS[1] if str(w).endswith("index-gaussian.json") else WEIGHTS[0]: w
             for w in layers.weights.values}
    for var in VARIABLES:
        table = {kind: {str(c): _series(layers[var].sel(weights=which[kind], components=c))
                        for c in layers.components.values} for kind in WEIGHTS}
        table["identity"] = _series(identity[var])
        out["variables"][var] = table
    return out


def _series(da) -> list[float | None]:
    """Per layer, 6 decimals; None where the value is NaN (overlap_gap with < 2 groups)."""
    return [None if v != v else round(float(v), 6) for v in da.squeeze().values]


def table(sidecar: dict) -> str:
    """The docs table: mean cosine per layer; groups, the largest cluster's share, the
    overlap gap and the inter-cluster attention at the last layer."""
    v = sidecar["variables"]
    last = len(v["mean_cosine"]["identity"]) - 1
    at_last = {"n_groups": ".0f", "largest_cluster": ".3f", "overlap_gap": ".3f",
               "inter_attention": ".3f"}
    head = ["weights", "components"] + [f"L{layer}" for layer in range(last + 1)] + \
        [f"{name} L{last}" for name in at_last]
    rows = [head, ["---"] * len(head)]

    def row(label, component, pick):
        return [label, component] + [f"{x:.3f}" for x in pick(v["mean_cosine"])] + \
            [_number(pick(v[name])[-1], form) for name, form in at_last.items()]

    for weights in WEIGHTS:
        for component in v["mean_cosine"][weights]:
            rows.append(row(weights, component, lambda t, w=weights, c=component: t[w][c]))
    rows.append(row("identity (sphere)", "-", lambda t: t["identity"]))
    return "\n".join("| " + " | ".join(r) + " |" for r in rows)


def _number(x, form: str) -> str:
    return "-" if x is None else format(x, form)


def draw(sidecar: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = SHOWN
    fig, axes = plt.subplots(len(shown), 2, figsize=(11, 2.8 * len(shown)), sharex=True,
                             sharey="row", layout="constrained", squeeze=False)
    colours = dict(zip(next(iter(sidecar["variables"]["mean_cosine"].values())),
                       ("black", "tab:blue", "tab:green", "tab:red", "tab:orange")))
    for row, var in zip(axes, shown):
        data = sidecar["variables"][var]
        for ax, weights in zip(row, WEIGHTS):
            for component, values in data[weights].items():
                ax.plot(range(len(values)), _nan(values), "o-", ms=3, color=colours[component],
                        lw=2.2 if component == "full" else 1.2, label=component)
            ax.plot(range(len(data["identity"])), _nan(data["identity"]), "k--", lw=1,
                    label="identity weights (sphere)")
            ax.set_title(f"{weights} matrices: {var}", fontsize=9)
            ax.set_xlabel("layer (0 = the model's embeddings)")
            ax.set_ylabel(var)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"all-MiniLM-L6-v2 block by block, {sidecar['n']} tokens; clusters at cosine"
                 f" > {1 - sidecar['cluster_eps']:g}", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _nan(values: list) -> list[float]:
    return [float("nan") if x is None else x for x in values]


def write_docs(docs: Path, sidecar: dict) -> None:
    """Replace the generated block of `docs` with the table of `sidecar`."""
    text = docs.read_text()
    start, stop = text.index(BEGIN) + len(BEGIN), text.index(END)
    docs.write_text(text[:start] + "\n" + table(sidecar) + "\n" + text[stop:])


def main(argv: list[str]) -> None:
    layers_path, identity_path, out = argv[:3]
    with xr.open_dataset(layers_path) as layers, xr.open_dataset(identity_path) as identity:
        sidecar = numbers(layers, identity)
    out = Path(out)
    out.with_suffix(".json").write_text(json.dumps(sidecar, indent=1) + "\n")
    draw(sidecar, out)
    if "--docs" in argv:  # only for the committed figure, never for check-figures
        write_docs(Path(argv[argv.index("--docs") + 1]), sidecar)


if __name__ == "__main__":
    main(sys.argv[1:])
