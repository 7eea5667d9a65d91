"""The observables' records: the one declaration everything else is derived from."""

import importlib
from pathlib import Path

import pytest

from sweep.kernels import codes
from sweep.observables import _docs, records
from sweep.observables.records import COLUMN, RECORDS, SAVE_ALL, SAVE_CLOSE, SAVE_PAIRS

ROOT = Path(__file__).parents[1]


def test_columns_are_the_records_in_order():
    assert [r.column for r in RECORDS] == list(range(len(RECORDS)))
    assert codes.OBSERVABLES == tuple(COLUMN._fields) == tuple(r.name for r in RECORDS)
    assert all(getattr(COLUMN, r.name) == r.column for r in RECORDS)
    assert codes.SERIES == {r.name: (r.long_name, r.units) for r in RECORDS}
    assert set(codes.RANGES) <= set(codes.SERIES) | set(codes.SCALARS)


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.name)
def test_each_path_names_a_function(record):
    """Every path's entry is module.function under sweep/ and names a callable there."""
    for path in ("general", "rows", "lanes", "blocked"):
        module, _, name = getattr(record.paths, path).rpartition(".")
        assert callable(getattr(importlib.import_module(f"sweep.{module}"), name)), path
    if record.kernel is not None:
        module, _, name = record.kernel.partition(":")
        assert callable(getattr(importlib.import_module(module), name))


def test_save_level_is_the_most_any_column_needs():
    assert codes.save_level(()) == SAVE_CLOSE
    assert codes.save_level(("order_parameter", "clustered_fraction")) == SAVE_CLOSE
    assert codes.save_level(("order_parameter", "n_clusters")) == SAVE_PAIRS
    assert codes.save_level(("order_parameter", "silhouette")) == SAVE_ALL
    for r in RECORDS:
        assert codes.save_level((r.name,)) == r.level
    assert records.columns_at(SAVE_CLOSE) == (COLUMN.order_parameter, COLUMN.clustered_fraction)


def test_results_doc_table_is_current():
    page = (ROOT / "docs" / "results.md").read_text()
    assert _docs.page(page) == page, \
        "docs/results.md is stale: run `python -m sweep.observables._docs`"
    for r in RECORDS:
        assert f"`{r.name}`" in _docs.table()


def test_results_doc_needs_its_markers():
    with pytest.raises(ValueError, match="markers"):
        _docs.page("no table here")
