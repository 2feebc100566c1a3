"""Record the OpenAPI schemas of an upstream project's CRDs at a release tag, for tests that
validate the platform's custom resources without a cluster or network.

    .venv/bin/python scripts/record_crd_schemas.py GIT_DIR TAG PATH... --repository OWNER/NAME \
        [--version v1beta2] --out tests/fixtures/crds/NAME.json

GIT_DIR is a clone (bare is fine) of the project; each PATH is a CRD file at TAG (Helm-templated
CRDs are fine: template lines sit outside the schema and are dropped). The output names the
repository, tag, file and blob of every schema, so a reviewer can check it against upstream.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

TEMPLATE_LINE = re.compile(r"^\s*\{\{.*\}\}\s*$")


def without_descriptions(node: Any, *, properties: bool = False) -> Any:
    """The schema without its prose (validation never reads it; it is most of a CRD's size). Under
    `properties` the keys are field names, so a field called "description" stays."""
    if isinstance(node, dict):
        return {
            key: without_descriptions(value, properties=key == "properties" and not properties)
            for key, value in node.items()
            if properties or key != "description"
        }
    if isinstance(node, list):
        return [without_descriptions(value) for value in node]
    return node


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "-C", git_dir, *args], check=True, capture_output=True, text=True).stdout


def schemas(git_dir: str, tag: str, path: str, versions: list[str]) -> dict[str, Any]:
    text = git(git_dir, "show", f"{tag}:{path}")
    # From the document's start (a Helm chart's CRD opens with a template comment), without Helm
    # template lines and templated values (they sit only in metadata and webhook wiring).
    text = text[text.index("apiVersion:") :]
    lines = [line for line in text.splitlines() if not TEMPLATE_LINE.match(line) and "{{" not in line]
    crd = yaml.safe_load("\n".join(lines))
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    blob = git(git_dir, "rev-parse", f"{tag}:{path}").strip()
    return {
        f"{group}/{version['name']}/{kind}": {
            "source": {"path": path, "blob": blob},
            "served": version["served"],
            "schema": without_descriptions(version["schema"]["openAPIV3Schema"]),
        }
        for version in crd["spec"]["versions"]
        if not versions or version["name"] in versions
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("git_dir")
    parser.add_argument("tag")
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--repository", required=True, help="owner/name, recorded with the schemas")
    parser.add_argument("--out", required=True)
    parser.add_argument("--version", action="append", default=[], help="record only this API version (repeatable)")
    args = parser.parse_args()
    recorded: dict[str, Any] = {"repository": args.repository, "tag": args.tag, "kinds": {}}
    for path in args.paths:
        recorded["kinds"].update(schemas(args.git_dir, args.tag, path, args.version))
    Path(args.out).write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}: {', '.join(sorted(recorded['kinds']))}")


if __name__ == "__main__":
    main()
