"""Renovate keeps the pins current: every add-on's pin (addons/<key>/__init__.py) and every annotated
image or provider pin is matched by one of renovate.json's managers, with the version it really has."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from addons.catalog import ARTIFACTS, CHARTS
from profiles.versions import CUDA_IMAGE, HTTP_PROVIDER_VERSION, RAY_IMAGE

ROOT = Path(__file__).resolve().parents[1]
CONFIG = json.loads((ROOT / "renovate.json").read_text())


@functools.cache
def project_sources() -> tuple[Path, ...]:
    """The project's Python files, not those of the environments and caches beside them (.venv,
    .tools, .cache: hundreds of thousands of files that Renovate never reads either)."""
    found: list[Path] = []
    for entry in ROOT.iterdir():
        if entry.name.startswith(".") or entry.name in ("cdktf.out", "state", "node_modules"):
            continue
        found += [entry] if entry.suffix == ".py" else sorted(entry.rglob("*.py")) if entry.is_dir() else []
    return tuple(found)


def matches() -> list[dict[str, str]]:
    """What each custom manager extracts from the files it covers (Renovate's regex syntax, in Python)."""
    found = []
    for manager in CONFIG["customManagers"]:
        files = [re.compile(p.strip("/")) for p in manager["managerFilePatterns"]]
        paths = [path for path in project_sources() if any(f.search(str(path.relative_to(ROOT))) for f in files)]
        for pattern in manager["matchStrings"]:
            regex = re.compile(pattern.replace("(?<", "(?P<"))
            for path in paths:
                for match in regex.finditer(path.read_text()):
                    groups = {k: v for k, v in match.groupdict().items() if v is not None}
                    found.append(
                        {"datasource": manager.get("datasourceTemplate", groups.get("datasource", "")), **groups}
                    )
    return found


def test_every_chart_pin_is_tracked():
    found = {(m["depName"], m["currentValue"]) for m in matches()}
    for chart in CHARTS.values():
        assert (chart.chart, chart.version) in found, chart.chart


def test_release_manifests_images_and_providers_are_tracked():
    found = matches()
    for artifact in ARTIFACTS.values():
        assert {"datasource": "github-tags", "depName": artifact.repository, "currentValue": artifact.tag} in found
    pairs = {(m["datasource"], m["depName"], m["currentValue"]) for m in found}
    assert ("terraform-provider", "hashicorp/http", HTTP_PROVIDER_VERSION) in pairs
    assert ("docker", "nvcr.io/nvidia/cuda", CUDA_IMAGE.rsplit(":", 1)[1]) in pairs
    assert ("docker", "rayproject/ray", RAY_IMAGE.rsplit(":", 1)[1]) in pairs


def test_the_config_is_renovates():
    assert CONFIG["$schema"] == "https://docs.renovatebot.com/renovate-schema.json"
    assert all(manager["customType"] == "regex" for manager in CONFIG["customManagers"])
