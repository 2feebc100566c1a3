"""What a namespace whose pods call a platform service needs (labels the server admits, egress,
environment, objects): a service's add-on offers it (addons/parts.py), client namespaces apply it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


def _no_objects(namespace: str) -> list[dict[str, Any]]:
    return []


@dataclass(frozen=True, kw_only=True)
class ClientAccess:
    """What a namespace whose pods call an add-on's service needs."""

    labels: Mapping[str, str] = field(default_factory=dict)
    """Labels on the client namespace (the server's ingress policy admits namespaces carrying them)."""
    allow: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    """NetworkPolicies in the client namespace (name -> spec): its egress to the server."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment the client's pods read (the service's address)."""
    objects: Callable[[str], list[dict[str, Any]]] = _no_objects
    """More objects in the client namespace (given its name), e.g. the address as a ConfigMap for
    pods the platform does not template."""

    @staticmethod
    def combined(offers: Sequence[ClientAccess]) -> ClientAccess:
        """Every offer at once (an add-on or tenant that is a client of all the services)."""

        def objects(namespace: str) -> list[dict[str, Any]]:
            return [obj for offer in offers for obj in offer.objects(namespace)]

        return ClientAccess(
            labels={key: value for offer in offers for key, value in offer.labels.items()},
            allow={name: spec for offer in offers for name, spec in offer.allow.items()},
            env={name: value for offer in offers for name, value in offer.env.items()},
            objects=objects,
        )
