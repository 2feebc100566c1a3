"""Pins and compatibility: the default Kubernetes version is current and supported by every pinned
component, the EFA guard reads the plugin's version, overrides are checked against the same
tables, and docs/versions.md lists what is pinned."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from addons.catalog import ARTIFACTS, CHARTS, DEFINITIONS
from addons.efa_device_plugin import PLUGIN_MINIMUM as EFA_PLUGIN_MINIMUM
from addons.karpenter import HANDLES_RESERVATION_INTERRUPTIONS as KARPENTER_HANDLES_RESERVATION_INTERRUPTIONS
from profiles import ProfileError, validate_profile
from profiles.versions import DEFAULT_KUBERNETES_VERSION, EKS_STANDARD_SUPPORT_ENDS, version_tuple
from tests.synth_helpers import resources
from tests.test_profiles import mutated

ROOT = Path(__file__).resolve().parents[1]


def test_the_default_kubernetes_is_the_newest_in_standard_support():
    assert max(EKS_STANDARD_SUPPORT_ENDS, key=version_tuple) == DEFAULT_KUBERNETES_VERSION
    # 1.33 left standard support on 29 July 2026: a default must not cost extended-support fees.
    assert EKS_STANDARD_SUPPORT_ENDS[DEFAULT_KUBERNETES_VERSION] > "2026-11-30"


@pytest.mark.parametrize("definition", [d for d in DEFINITIONS if d.kubernetes_minimums], ids=lambda d: d.key)
def test_every_pinned_component_supports_the_default(definition):
    needed = definition.kubernetes_minimums.get(DEFAULT_KUBERNETES_VERSION, ())
    assert version_tuple(CHARTS[definition.key].version) >= needed


def test_pins_meet_the_minimums_and_the_efa_guard_reads_the_plugin():
    for definition in DEFINITIONS:
        for minimum in definition.minimums:
            assert version_tuple(CHARTS[definition.key].version) >= minimum.version, definition.key
    assert version_tuple(CHARTS["efa_device_plugin"].app_version) >= EFA_PLUGIN_MINIMUM
    assert all(chart.app_version for chart in CHARTS.values())


def problem(doc: dict) -> str:
    with pytest.raises(ProfileError) as error:
        validate_profile(doc)
    return "\n".join(error.value.problems)


def test_an_efa_chart_that_ships_an_old_plugin_is_refused():
    # Chart v0.5.14 ships plugin v0.5.8: its chart version passed the old "0.5.10" guard.
    found = problem(mutated(addons={"efa_device_plugin": {"chart_version": "v0.5.14"}}))
    assert "addons.efa_device_plugin.chart_version" in found and "first shipped in chart v0.5.18" in found


def test_the_karpenter_matrix_is_enforced():
    found = problem(mutated(addons={"karpenter": {"chart_version": "1.8.1"}}))
    assert "addons.karpenter.chart_version: karpenter 1.8.1 does not support Kubernetes 1.35" in found
    found = problem(mutated(cluster__kubernetes_version="1.36", addons={"karpenter": {"chart_version": "1.12.0"}}))
    assert "allowed: karpenter 1.13.0 or later for Kubernetes 1.36" in found
    assert validate_profile(
        mutated(cluster__kubernetes_version="1.34", addons={"karpenter": {"chart_version": "1.8.1"}})
    )


def test_the_gpu_operator_matrix_is_enforced():
    found = problem(mutated(cluster__kubernetes_version="1.36", addons={"gpu_operator": {"chart_version": "v26.3.1"}}))
    assert "gpu_operator v26.3.1 does not support Kubernetes 1.36" in found


def test_the_reservation_interruption_rule_follows_karpenters_version(synthesized):
    rules = resources(synthesized.stack("gpu-validation", "addons"), "aws_cloudwatch_event_rule").values()
    kinds = {json.loads(rule["event_pattern"])["detail-type"][0] for rule in rules}
    assert version_tuple(CHARTS["karpenter"].version) >= KARPENTER_HANDLES_RESERVATION_INTERRUPTIONS
    assert "EC2 Capacity Reservation Instance Interruption Warning" in kinds


def test_the_versions_page_lists_every_pin():
    section = (ROOT / "docs" / "versions.md").read_text()
    for chart in CHARTS.values():
        assert f"| `{chart.chart}` ({chart.repository}) | {chart.version} |" in section, chart.chart
        assert chart.app_version.removeprefix("v") in section, chart.chart
    for artifact in ARTIFACTS.values():
        assert artifact.tag in section and artifact.repository in section
    assert f"Kubernetes {DEFAULT_KUBERNETES_VERSION}" in section


# Literals that pin something: a container image with a tag, an EKS AMI type, a chart version field.
PIN_LITERAL = re.compile(r"""["'](?:[a-z0-9.-]+(?:/[a-z0-9._-]+)+:v?\d[\w.-]*|AL20\d\d_[A-Za-z0-9_]+)["']""")


def pin_homes(path: Path) -> bool:
    """Where pins may be written: profiles/versions.py, and an add-on's own package definition."""
    relative = path.relative_to(ROOT)
    return relative == Path("profiles/versions.py") or (
        relative.parts[0] == "addons" and len(relative.parts) == 3 and relative.name == "__init__.py"
    )


def test_every_pin_is_written_in_one_of_its_homes():
    sources = [
        ROOT / "main.py",
        *(
            p
            for d in ("addons", "components", "profiles", "stacks", "operate", "manifests")
            for p in (ROOT / d).rglob("*.py")
        ),
    ]
    stray = {
        f"{path.relative_to(ROOT)}:{number}": line.strip()
        for path in sources
        if not pin_homes(path)
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if PIN_LITERAL.search(line)
    }
    assert stray == {}


def test_the_pin_scan_finds_pins():
    assert PIN_LITERAL.search('IMAGE = "nvcr.io/nvidia/cuda:12.8.1-base-ubuntu24.04"')
    assert PIN_LITERAL.search('ami_type="AL2023_x86_64_NVIDIA"')
    assert PIN_LITERAL.search("'quay.io/prometheus/node-exporter:v1.12.1'")
    assert not PIN_LITERAL.search('"https://example.com/a:b"') and not PIN_LITERAL.search('"kube-system"')
