"""The profiles the tests run over, and the settings of the test run; imported by test modules
(conftest.py holds only fixtures)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path

from profiles import PlatformConfig, available_profiles, load_profile
from stacks import AWS_ONLY_LAYERS

FIXTURE_PROFILES = Path(__file__).parent / "fixtures" / "profiles"
# The inner loop (`make check`): the tests parametrized over profiles run for the default one only.
QUICK = os.environ.get("GPU_PLATFORM_QUICK_CHECK") == "1"
# Extra valid profiles that exercise paths the shipped ones do not (capacity reservations).
ALL_FIXTURES = tuple(sorted(path.stem for path in FIXTURE_PROFILES.glob("*.yaml")))
ALL_PROFILES = (*available_profiles(), *ALL_FIXTURES)
SHIPPED = tuple(available_profiles())[:1] if QUICK else tuple(available_profiles())
FIXTURES = () if QUICK else ALL_FIXTURES
AWS_LAYERS = AWS_ONLY_LAYERS
# Profiles exported as HCL (a process each): the default one and a multi-node EFA one.
HCL_PROFILES = ("gpu-validation", "p5-training")
IN_CI = os.environ.get("CI", "").lower() == "true"
# Profiles whose AWS layers go through the emulated deploy cycle (a default one and a multi-node
# EFA one with protected data), each in a process of its own, concurrently.
EMULATED_PROFILES = ("gpu-validation", "p5-training")
# Secrets a careless synthesis could leak: present in the environment while synthesizing, they
# must appear nowhere in the JSON.
TEST_SECRETS = {
    "TF_VAR_grafana_admin_password": "grafana-test-secret-9f8e7d6c",
    "OIDC_CLIENT_SECRET": "oidc-test-secret-1a2b3c4d",
}


def profile_source(name: str) -> str:
    return name if name in available_profiles() else str(FIXTURE_PROFILES / f"{name}.yaml")


@functools.cache
def profile_config(name: str) -> PlatformConfig:
    """A shipped or fixture profile, validated once per session (no synthesis)."""
    return load_profile(profile_source(name))


def profiles_where(predicate: Callable[[PlatformConfig], bool]) -> tuple[str, ...]:
    """The profiles the tests run over for which `predicate` holds (for parametrizing a test by
    what it checks, instead of passing silently on the profiles it does not apply to)."""
    return tuple(name for name in SHIPPED + FIXTURES if predicate(profile_config(name)))
