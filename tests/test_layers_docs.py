"""docs/layers.md says what figures/layers.json holds: its table is the sidecar's, and each
claim of its "What the table says" holds in those numbers."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def figure():
    spec = importlib.util.spec_from_file_location("layers_figure", ROOT / "figures/layers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, json.loads((ROOT / "figures/layers.json").read_text())


def test_the_docs_table_is_the_sidecars(figure):
    module, sidecar = figure
    docs = (ROOT / "docs/layers.md").read_text()
    block = docs[docs.index(module.BEGIN) + len(module.BEGIN):docs.index(module.END)]
    assert block.strip() == module.table(sidecar)


def test_what_the_docs_say_resists_clustering_holds(figure):
    _, sidecar = figure
    largest = sidecar["variables"]["largest_cluster"]
    trained, gaussian = largest["trained"], largest["norm-matched Gaussian"]
    collapsed = {name: values[-1] > 0.9 for name, values in trained.items()}
    # only V = I makes the trained model condense, as identity weights do
    assert collapsed == {"full": False, "no_ffn": False, "identity_ffn": False,
                         "v_identity": True, "no_ln_gain": False}
    assert largest["identity"][-1] > 0.9
    # with norm-matched Gaussian matrices every variant condenses within six layers
    assert all(values[-1] > 0.9 for values in gaussian.values())
    groups, gap = sidecar["variables"]["n_groups"], sidecar["variables"]["overlap_gap"]
    assert groups["trained"]["full"][-1] > 1 and gap["trained"]["full"][-1] > 0
    assert groups["trained"]["v_identity"][-1] == 1 and groups["identity"][-1] == 1
    assert all(values[-1] == 1 for values in groups["norm-matched Gaussian"].values())
    cos = sidecar["variables"]["mean_cosine"]["trained"]
    assert cos["full"][-1] > cos["full"][0]  # mild alignment: the probe's table
