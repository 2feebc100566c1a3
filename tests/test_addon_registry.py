"""The catalog drives everything about add-ons: each add-on is one package (definition and
installer) plus one catalog line, and the maintainer's guide's recipe, followed word for word in a
temporary copy of the repository (tests/test_addon_recipe.py), gives an add-on that validates,
synthesizes and is in the schema."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from addons.catalog import ARTIFACTS, CHARTS, DEFINITIONS
from addons.definition import AddonConfig, ReleaseConfig
from addons.registry import ADDONS
from components.helm.addon import AddonSpec, HelmAddonSpec
from profiles.addons import AddonsConfig
from tests.cases import FIXTURES, SHIPPED
from tests.synth_helpers import resources

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "contributing.md"


def test_the_profile_model_pins_and_installers_are_the_catalogs():
    keys = [definition.key for definition in DEFINITIONS]
    assert len(keys) == len(set(keys))
    assert list(AddonsConfig.model_fields) == keys == [addon.key for addon in ADDONS]
    assert set(CHARTS) | set(ARTIFACTS) == set(keys) and not set(CHARTS) & set(ARTIFACTS)
    for definition, addon in zip(DEFINITIONS, ADDONS, strict=True):
        assert addon.definition is definition
        field = AddonsConfig.model_fields[definition.key]
        assert field.annotation is definition.settings_type and issubclass(field.annotation, AddonConfig)
        assert field.description, definition.key
        # A Helm add-on's settings can override its chart version; a manifest add-on's cannot.
        helm = isinstance(addon, HelmAddonSpec)
        assert issubclass(definition.settings_type, ReleaseConfig) is helm and (definition.key in CHARTS) is helm


@pytest.mark.parametrize("addon", ADDONS, ids=lambda addon: addon.key)
def test_every_addon_lives_in_its_own_package(addon: AddonSpec):
    assert type(addon).__module__ == f"addons.{addon.key}.install"
    assert type(addon.definition).__module__ == "addons.definition"
    assert addon.definition.settings_type.__module__ == f"addons.{addon.key}"
    assert addon.release_name and addon.namespace


def test_the_generic_installer_knows_no_particular_addon():
    base = (ROOT / "components" / "helm" / "addon.py").read_text().lower()
    named = [d.key for d in DEFINITIONS if d.key in base or d.key.replace("_", "-") in base]
    assert named == [], f"components/helm/addon.py names add-ons: {named}"
    assert "mlflow" not in (ROOT / "stacks" / "addons.py").read_text().lower()


@pytest.mark.parametrize("profile", SHIPPED + FIXTURES)
def test_the_catalog_decides_what_the_addons_layer_installs(synthesized, profile):
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


def recipe() -> tuple[dict[str, str], str]:
    """The files the guide's "Adding an add-on" recipe writes (path -> text), and its catalog step."""
    section = GUIDE.read_text().split("### Adding an add-on", 1)[1].split("\n### ", 1)[0]
    files = {
        path: textwrap.dedent(code)
        for path, code in re.findall(r"File `([\w/.]+\.py)`:.*?```python\n(.*?)```", section, flags=re.DOTALL)
    }
    catalog_step = re.search(r"File `addons/catalog.py`:(.*?)\n\d\. ", section, flags=re.DOTALL)
    assert catalog_step, "the recipe's catalog step"
    return files, catalog_step.group(1)


def test_the_recipe_names_real_files_and_symbols():
    files, catalog_step = recipe()
    assert set(files) == {"addons/podinfo/__init__.py", "addons/podinfo/install.py"}
    assert "from addons import podinfo" in catalog_step and "podinfo.DEFINITION," in catalog_step
    section = GUIDE.read_text().split("### Adding an add-on", 1)[1].split("\n### ", 1)[0]
    for path in re.findall(r"`((?:addons|components|profiles|tests)/[\w/]+\.py)`", section):
        if "podinfo" not in path:
            assert (ROOT / path).is_file(), path


def test_the_addons_page_lists_every_addon_with_its_default_and_namespace():
    page = (ROOT / "docs" / "addons.md").read_text()
    rows = {
        match.group(1): (match.group(2), match.group(3))
        for match in re.finditer(
            r"^\| \[`addons\.(\w+)`\]\(addons/\1\.md\) \| (on|off) \| `([\w-]+)`", page, flags=re.MULTILINE
        )
    }
    assert set(rows) == {definition.key for definition in DEFINITIONS}
    for definition in DEFINITIONS:
        default, namespace = rows[definition.key]
        assert (default == "on") is definition.settings_type().enabled, definition.key
        assert namespace == definition.namespace, definition.key


@pytest.mark.parametrize("definition", DEFINITIONS, ids=lambda d: d.key)
def test_every_addon_has_a_page_naming_its_settings_and_pin(definition):
    page = (ROOT / "docs" / "addons" / f"{definition.key}.md").read_text()
    assert page.startswith(f"# `addons.{definition.key}`")
    for name in definition.settings_type.model_fields:
        assert f"| `{name}` |" in page, name
    version = definition.pin.version if hasattr(definition.pin, "version") else definition.pin.tag
    assert version in page and f"Namespace: `{definition.namespace}`" in page
    default = "on" if definition.settings_type().enabled else "off"
    assert f"Default: {default}." in page
