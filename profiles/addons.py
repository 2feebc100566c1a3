"""Addons-layer settings: the profile's `addons:` section, one field per add-on in the catalog,
each the add-on's own settings model (defined in its package, `addons/<key>/__init__.py`).

Code reads an add-on's settings through its definition (`gpu_operator.DEFINITION.settings(config)`),
which is typed; the model itself is built from the catalog, so no list here is kept by hand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, create_model

from addons.catalog import DEFINITIONS
from addons.definition import AddonDefinition
from profiles.base import Strict


def _field(definition: AddonDefinition[Any]) -> tuple[type, Any]:
    return definition.settings_type, Field(default_factory=definition.settings_type, description=definition.description)


if TYPE_CHECKING:

    class AddonsConfig(Strict):
        """Which add-ons to install and how (read each through its definition)."""

else:
    AddonsConfig = create_model(
        "AddonsConfig",
        __base__=Strict,
        __doc__="Which add-ons to install and how: one field per add-on, in install order.",
        **{definition.key: _field(definition) for definition in DEFINITIONS},
    )
