"""Instance profiles: the pydantic model, the GPU instance catalog and the loader."""

from profiles.loader import DEFAULT_PROFILE, ProfileError, available_profiles, load_profile, validate_profile
from profiles.models import PlatformConfig

__all__ = [
    "DEFAULT_PROFILE",
    "PlatformConfig",
    "ProfileError",
    "available_profiles",
    "load_profile",
    "validate_profile",
]
