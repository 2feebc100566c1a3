"""The generated reference pages are current, and say what the synthesized layers really publish."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from tests.cases import FIXTURES, SHIPPED

ROOT = Path(__file__).resolve().parents[1]


def reference_docs():
    spec = importlib.util.spec_from_file_location("reference_docs", ROOT / "scripts" / "reference_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_outputs_is_current():
    page = (ROOT / "docs" / "outputs.md").read_text()
    assert page == reference_docs().outputs_page(), "docs/outputs.md is stale: run make reference-docs"


def test_docs_versions_pin_tables_are_current():
    module = reference_docs()
    page = (ROOT / "docs" / "versions.md").read_text()
    assert page == module.versions_page(), "docs/versions.md's pin tables are stale: run make reference-docs"
    names = [name for name, _, why in module._other_pins() if why]
    assert len(names) == len(module._other_pins()) >= 10  # every pin of profiles/versions.py says why


def test_every_synthesized_output_is_on_the_page_under_its_layer(synthesized):
    """Each output of every profile's layers matches a row of its layer's table (a `<key>` row
    stands for any key)."""
    published_rows(synthesized)


@pytest.mark.every_profile
def test_every_row_of_the_page_is_published_by_some_profile(synthesized):
    """Each row is published by at least one profile: only meaningful over all of them (the inner
    loop synthesizes the default profile alone)."""
    tables, seen = published_rows(synthesized)
    for layer, rows in tables.items():
        assert set(rows) <= seen[layer], f"{layer}: rows no profile publishes: {sorted(set(rows) - seen[layer])}"


def published_rows(synthesized) -> tuple[dict[str, list[str]], dict[str, set[str]]]:
    """Each layer's table rows, and the rows the synthesized profiles' outputs match."""
    module = reference_docs()
    tables = {
        layer: [name for name, _, _ in module._rows(layer, contract)] for layer, contract in module.LAYER_CONTRACTS
    }
    seen = {layer: set() for layer in tables}
    for profile in SHIPPED + FIXTURES:
        for layer in ("cluster", "storage", "build", "addons", "workloads"):
            outputs = synthesized.stack(profile, layer).get("output", {})
            for name in (name for name in outputs if not name.startswith(module.CROSS_STACK_PREFIX)):
                rows = [row for row in tables.get(layer, []) if re.fullmatch(row.replace("<key>", r"\w+"), name)]
                assert rows, f"{profile} {layer} publishes {name!r}, which docs/outputs.md does not list"
                seen[layer].update(rows)
    return tables, seen
