"""The docs' generated tables are current, their rules are the code's, and the docs name only
modules and functions that exist."""

import importlib
import re
import sys
from pathlib import Path

import pytest

from sweep.config import schema
from sweep.config.grid import expand
from sweep.execution.kernel import kernel_plan
from sweep.execution.layers.flow import as_flow

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import strategies_table  # noqa: E402


def test_the_performance_page_holds_the_strategies_table_of_the_records():
    doc = strategies_table.DOC.read_text()
    assert f"{strategies_table.BEGIN}\n{strategies_table.table()}\n{strategies_table.END}" in doc, \
        "docs/performance.md is stale: run `make docs`"


def job(model, integrate=None):
    raw = {"name": "k", "model": model, "init": {}, "integrate": integrate or {}, "grid": {}}
    return next(iter(expand(schema.from_dict(raw))))


@pytest.mark.parametrize("model, integrate, strategy, symmetric", [
    ({"n": 32, "d": 3}, None, "lanes", False),
    ({"n": 32, "d": 4}, None, "rows", False),
    ({"n": 255, "d": 9}, None, "rows", False),
    ({"n": 256, "d": 3}, None, "blocked", False),
    ({"n": 1024, "d": 3}, None, "blocked", True),
    ({"n": 5793, "d": 3}, None, "blocked", False),  # n^2 x 8 bytes beyond 256 MiB
    ({"n": 5793, "d": 3}, {"dtype": "float32"}, "blocked", True),
    ({"n": 32, "d": 3, "heads": 2}, None, "general", False),
    ({"n": 32, "d": 3, "noise": 0.1}, None, "general", False),
    ({"n": 32, "d": 3, "beta": 501.0}, {"dt": 1.0, "save_every": 1.0}, "general", False),
    ({"n": 32, "d": 3, "attention": "unnormalized", "beta": 301.0}, None, "general", False),
    ({"n": 6, "d": 4, "layers": 3, "norm": "post"}, None, "layers", False),
])
def test_each_row_of_the_strategies_table_is_the_rule_kernel_plan_applies(
        model, integrate, strategy, symmetric):
    plan = kernel_plan(job(model, integrate))
    assert (plan.strategy.name, plan.symmetric) == (strategy, symmetric)
    assert f"| `{strategy}` |" in strategies_table.table()


def test_a_layer_stack_that_runs_as_a_plain_flow_takes_that_flows_kernel():
    stack = job({"n": 32, "d": 3, "layers": 4})
    flow = as_flow(stack)
    assert flow is not None and kernel_plan(stack) == kernel_plan(flow)
    assert kernel_plan(stack).strategy.name == "lanes"


# ---------------------------------------------------------------- names in the docs

SECTIONS = ("model.", "init.", "integrate.", "output.", "grid.", "training.")  # config keys
FILES = (".md", ".yaml", ".nc", ".json", ".npy", ".npz", ".txt", ".png", ".pdf", ".pkl", ".toml",
         ".log", ".safetensors")
NAME = re.compile(r"`(?:sweep[./])?((?:[a-z_]+/)*[a-z_]+(?:\.py)?(?:\.[A-Za-z_]\w*)*)`")


def _modules() -> dict[str, list[str]]:
    """Every suffix of a sweep module's dotted path -> the modules it may name."""
    out: dict[str, list[str]] = {}
    for path in (ROOT / "sweep").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if parts[-1] == "__main__":
            continue
        for k in range(1, len(parts)):
            out.setdefault(".".join(parts[-k:]), []).append(".".join(parts))
    return out


def _exists(name: str, modules: dict[str, list[str]]) -> bool | None:
    """Whether a module path (a/b.py, a.b) with attributes after it resolves; None when its
    first part names no sweep module (not a name of ours)."""
    pieces = name.replace(".py", "").replace("/", ".").split(".")
    for cut in range(len(pieces), 0, -1):
        for module in modules.get(".".join(pieces[:cut]), []):
            obj = importlib.import_module(module)
            for attr in pieces[cut:]:
                obj = getattr(obj, attr, None)
            if obj is not None:
                return True
        if ".".join(pieces[:cut]) in modules:
            return False
    return None


def test_the_docs_name_only_modules_and_functions_that_exist():
    modules, stale = _modules(), []
    for page in [ROOT / "README.md", ROOT / "benchmarks" / "HISTORY.md",
                 *sorted((ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for name in NAME.findall(line):
                if name.startswith(SECTIONS) or name.endswith(FILES) or not {".", "/"} & set(name):
                    continue
                if _exists(name, modules) is False:
                    stale.append(f"{page.relative_to(ROOT)}:{number}: {name}")
    assert not stale, "names that no longer exist:\n" + "\n".join(stale)


# ---------------------------------------------------------------- the config keys

def test_the_config_page_holds_the_key_tables_of_the_field_records():
    from sweep.config import keydocs

    page = (ROOT / keydocs.PAGE_NAME).read_text()
    assert f"{keydocs.BEGIN}\n{keydocs.key_tables()}\n{keydocs.END}" in page, \
        "docs/config.md is stale: run `make docs`"


def test_every_field_of_every_section_has_a_description_and_nothing_else_does():
    from dataclasses import fields

    from sweep.config import keydocs

    sections = {**schema.SECTIONS, "output": schema.Output}
    assert {s: set(d) for s, d in keydocs.DESCRIPTIONS.items()} == \
        {s: {f.name for f in fields(cls)} for s, cls in sections.items()}
    assert {s for s, _ in keydocs.ALLOWED} <= set(sections)


def test_a_rule_on_the_record_shows_in_its_row():
    from sweep.config import keydocs

    rule = schema.field_rule("init", "overlap")
    assert keydocs.allowed("init", "overlap", rule) == ">= 0, < 1"
    rule = schema.field_rule("model", "layers")
    assert keydocs.allowed("model", "layers", rule) == ">= 1 (or null)"
    assert "| `method` | string | `euler` | euler \\| rk4 \\| layer \\| heun |" in \
        keydocs.key_tables()
