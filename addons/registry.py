"""The installers of the catalog's add-ons, in install order: `addons/<key>/install.py` defines
`ADDON`, found by that convention, so the catalog line is the only registration."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from addons.catalog import DEFINITIONS
from components.helm.addon import AddonSpec


def _installer(key: str) -> AddonSpec[Any]:
    module = import_module(f"addons.{key}.install")
    addon = getattr(module, "ADDON", None)
    if not isinstance(addon, AddonSpec):
        raise TypeError(f"addons/{key}/install.py must end with ADDON = <its AddonSpec subclass>()")
    return addon


ADDONS: tuple[AddonSpec[Any], ...] = tuple(_installer(definition.key) for definition in DEFINITIONS)
