"""Instance profiles: the pydantic model, the GPU instance catalog and the loader.

The package's names are loaded on first use, so that importing one binding-free module of it
(`profiles.base`, as every add-on definition does) does not load the whole model first.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from profiles.loader import DEFAULT_PROFILE, ProfileError, available_profiles, load_profile, validate_profile
    from profiles.models import PlatformConfig

_HOMES = {
    "DEFAULT_PROFILE": "profiles.loader",
    "ProfileError": "profiles.loader",
    "available_profiles": "profiles.loader",
    "load_profile": "profiles.loader",
    "validate_profile": "profiles.loader",
    "PlatformConfig": "profiles.models",
}

__all__ = [
    "DEFAULT_PROFILE",
    "PlatformConfig",
    "ProfileError",
    "available_profiles",
    "load_profile",
    "validate_profile",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'profiles' has no attribute {name!r}")
    return getattr(import_module(_HOMES[name]), name)
