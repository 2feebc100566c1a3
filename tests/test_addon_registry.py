"""The add-on registry drives the addons layer: each add-on is one module, one registry line, one
profile field and one chart pin, and the maintainer's guide's recipe names the files that really hold them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components.helm.addon import AddonSpec, HelmAddonSpec
from components.helm.registry import ADDONS
from profiles.addons import AddonConfig, AddonsConfig, ReleaseConfig
from profiles.versions import ARTIFACTS, CHARTS, MIN_VERSIONS
from tests.cases import FIXTURES, SHIPPED
from tests.synth_helpers import resources

ROOT = Path(__file__).resolve().parents[1]


def test_every_addon_has_one_profile_field_and_one_pin():
    keys = [addon.key for addon in ADDONS]
    assert len(keys) == len(set(keys))
    assert set(keys) == set(AddonsConfig.model_fields) == set(CHARTS) | set(ARTIFACTS)
    assert not set(CHARTS) & set(ARTIFACTS)
    assert set(MIN_VERSIONS) <= set(keys)
    for addon in ADDONS:
        field = AddonsConfig.model_fields[addon.key]
        assert isinstance(field.annotation, type) and issubclass(field.annotation, AddonConfig), addon.key
        # A Helm add-on's settings can override its chart version; a manifest add-on's cannot.
        helm = isinstance(addon, HelmAddonSpec)
        assert issubclass(field.annotation, ReleaseConfig) is helm and (addon.key in CHARTS) is helm


@pytest.mark.parametrize("addon", ADDONS, ids=lambda addon: addon.key)
def test_every_addon_lives_in_its_own_module(addon: AddonSpec):
    module = type(addon).__module__
    assert module == f"components.helm.{addon.key}"
    assert addon.release_name and addon.namespace


@pytest.mark.parametrize("profile", SHIPPED + FIXTURES)
def test_the_registry_decides_what_the_addons_layer_installs(synthesized, profile):
    config = synthesized.configs[profile]
    expected = {addon.release_name for addon in ADDONS if addon.enabled(config) and isinstance(addon, HelmAddonSpec)}
    installed = {body["name"] for body in resources(synthesized.stack(profile, "addons"), "helm_release").values()}
    assert installed == expected
    chart_of = {
        addon.release_name: addon.chart(config)
        for addon in ADDONS
        if addon.enabled(config) and isinstance(addon, HelmAddonSpec)
    }
    for body in resources(synthesized.stack(profile, "addons"), "helm_release").values():
        chart = chart_of[body["name"]]
        assert (body["repository"], body["chart"], body["version"]) == (chart.repository, chart.chart, chart.version)


def test_the_contributing_recipe_names_real_files():
    guide = (ROOT / "docs" / "contributing.md").read_text()
    recipe = guide.split("### Adding an add-on", 1)[1].split("\n### ", 1)[0]
    named = set(re.findall(r"`((?:components|profiles)/[\w/]+\.py)`", recipe))
    assert {"components/helm/registry.py", "profiles/addons.py", "profiles/versions.py"} <= named
    assert all((ROOT / path).is_file() for path in named), named
    for symbol in ("HelmAddonSpec", "ADDON", "AddonsConfig", "CHARTS", "MIN_VERSIONS", "ReleaseConfig"):
        assert symbol in recipe
