"""The catalog's add-ons' rules for a whole profile (addons/definition.py ProfileRules), found by
convention: `addons/<key>/profile_rules.py` ends with `RULES`; an add-on without one adds none.
Read by the profile validator (profiles/models.py), so nothing here may import the profile model."""

from __future__ import annotations

from typing import Any

from addons.catalog import DEFINITIONS, package_module
from addons.definition import AddonDefinition, PlatformConfig, ProfileRules


def _rules(definition: AddonDefinition[Any]) -> ProfileRules:
    """The add-on's `addons/<key>/profile_rules.py` RULES, or rules that add nothing."""
    module = package_module(definition, "profile_rules")
    if module is None:
        return ProfileRules()
    rules = getattr(module, "RULES", None)
    if not isinstance(rules, ProfileRules):
        raise TypeError(f"addons/{definition.key}/profile_rules.py must end with RULES = ProfileRules(...)")
    return rules


RULES: tuple[tuple[AddonDefinition[Any], ProfileRules], ...] = tuple(
    (definition, _rules(definition)) for definition in DEFINITIONS
)
"""Every add-on's profile rules, in install order."""


def enabled_rules(config: PlatformConfig) -> tuple[ProfileRules, ...]:
    """The rules of the add-ons the profile enables."""
    return tuple(rules for definition, rules in RULES if definition.enabled(config))
