"""Container image references: the profile's one grammar (profiles/image_ref.py), for the
components that take references apart."""

from __future__ import annotations

from profiles.image_ref import ImageReference, parse_image_reference

__all__ = ["ImageReference", "parse_image_reference"]
