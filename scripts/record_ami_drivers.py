"""Record the NVIDIA driver each EKS AL2023 AMI release carries, for the profile check that the
pinned AMI's driver runs the CUDA of the platform's images (no network needed at check time).

    .venv/bin/python scripts/record_ami_drivers.py GIT_DIR --out profiles/ami_nvidia_drivers.json

GIT_DIR is a clone (bare is fine) of awslabs/amazon-eks-ami. Each release tag vYYYYMMDD builds its
AL2023 NVIDIA AMIs with templates/al2023/variables-default.json's nvidia_driver_major_version,
unless templates/al2023/variables-<kubernetes minor>.json sets another for that minor. That holds
from v20250410 on, checked against the drivers the release notes (CHANGELOG.md's package tables)
list for every release: before it the variables and the published AMIs differ (v20250403's 1.32
AMIs shipped 570 under variables saying 560, v20240924's shipped 560 under 555, and the first
September 2024 tags published no AL2023 NVIDIA AMI), so earlier releases are left out of the record
and a pin to one of them is not checked.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path

RELEASE_TAG = re.compile(r"^v(\d{8})$")
FIRST_MATCHING_RELEASE = "20250410"
VARIABLES = "templates/al2023/variables-{}.json"
KEY = "nvidia_driver_major_version"


def git(git_dir: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", git_dir, *args], capture_output=True, text=True, check=False)


def driver_of(git_dir: str, tag: str, name: str) -> int | None:
    shown = git(git_dir, "show", f"{tag}:{VARIABLES.format(name)}")
    if shown.returncode != 0:
        return None
    value = json.loads(shown.stdout).get(KEY)
    return int(value) if value else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("git_dir")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    releases: dict[str, dict[str, int]] = {}
    for tag in sorted(git(args.git_dir, "tag").stdout.split()):
        matched = RELEASE_TAG.match(tag)
        if not matched or matched.group(1) < FIRST_MATCHING_RELEASE:
            continue
        if (default := driver_of(args.git_dir, tag, "default")) is None:
            continue
        listed = git(args.git_dir, "ls-tree", "--name-only", tag, "templates/al2023/").stdout.split()
        minors = sorted(m.group(1) for path in listed if (m := re.search(r"variables-(\d+\.\d+)\.json$", path)))
        overrides = {
            minor: driver for minor in minors if (driver := driver_of(args.git_dir, tag, minor)) not in (None, default)
        }
        releases[matched.group(1)] = {"default": default, **overrides}
    newest = max(releases)
    record = {
        "source": {
            "repository": "awslabs/amazon-eks-ami",
            "since": f"v{FIRST_MATCHING_RELEASE} (earlier releases' variables differ from their published AMIs)",
            "files": f"{VARIABLES.format('default')} and {VARIABLES.format('<minor>')} ({KEY}) at each release tag",
            "newest_release": newest,
        },
        "releases": releases,
    }
    args.out.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}: {len(releases)} releases, newest v{newest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
