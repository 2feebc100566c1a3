"""The commands about profile files: list the shipped ones, copy one to edit, rewrite the JSON schema."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cli import common
from profiles import ProfileError, available_profiles, load_profile
from profiles.base import NAME_PATTERN, PATTERN_WORDS
from profiles.loader import resolve
from profiles.schema import SCHEMA_PATH, profile_schema

if TYPE_CHECKING:
    pass


def list_profiles() -> int:
    for name in available_profiles():
        config = load_profile(name)
        groups = (
            ", ".join(
                f"{g.max_size} x {g.instance_type} ({g.catalog_entry.gpu_count} x {g.catalog_entry.gpu_model}, "
                f"{g.catalog_entry.efa_interfaces if g.efa_enabled else 0} EFA)"
                for g in config.cluster.gpu_node_groups
            )
            or "no GPU node group"
        )
        print(f"{name:16} {config.region:12} {groups}")
    return 0


def copy_profile(source: str, target: Path) -> int:
    """Copy a shipped profile to `target`: its schema line points at this checkout's schema from
    wherever the copy lives, and its `name` is the file's, so it gets its own output and state."""
    if target.suffix not in (".yaml", ".yml") or target.exists():
        print(f"{target}: give the path of a new .yaml file (it must not exist yet)", file=sys.stderr)
        return common.EXIT_USER_ERROR
    # The file's name becomes the profile's `name`: refuse one that cannot be, before writing anything.
    if not re.fullmatch(NAME_PATTERN, target.stem):
        print(
            f"{target}: the file name {target.stem!r} becomes the profile's name, which must be "
            f"{PATTERN_WORDS[NAME_PATTERN]} (e.g. my-profiles/team-vision.yaml); nothing was written",
            file=sys.stderr,
        )
        return common.EXIT_USER_ERROR
    schema = os.path.relpath(SCHEMA_PATH, target.resolve().parent)
    text = resolve(source).read_text()
    text = re.sub(
        r"^# yaml-language-server: \$schema=.*$",
        f"# yaml-language-server: $schema={schema}",
        text,
        count=1,
        flags=re.MULTILINE,
    )
    text = re.sub(r"^name: .*$", f"name: {target.stem}", text, count=1, flags=re.MULTILINE)
    text = re.sub(rf"^(\s+profile: ){re.escape(source)}$", rf"\g<1>{target.stem}", text, count=1, flags=re.MULTILINE)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    try:
        load_profile(str(target))
    except ProfileError as error:  # nothing half-made is left behind
        target.unlink()
        print(f"{target}: the copy of {source} does not load, so it was not kept:\n{error.render()}", file=sys.stderr)
        return common.EXIT_USER_ERROR
    print(f"wrote {target} from {source} (name: {target.stem}); edit it, then `make synth PROFILE={target}`")
    return 0


def write_schema() -> int:
    SCHEMA_PATH.write_text(json.dumps(profile_schema(), indent=2) + "\n")
    print(f"wrote {SCHEMA_PATH}")
    return 0
