"""Write the reference pages that are generated from the code: docs/outputs.md (every layer's
Terraform outputs, from the layer contracts in stacks/contracts.py) and the pin tables of
docs/versions.md (from the add-ons' definitions and profiles/versions.py, each pin with the
comment written above it). `make reference-docs` runs it; tests/test_reference_docs.py fails when
a page is out of date.

    .venv/bin/python scripts/reference_docs.py
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import profiles.versions  # noqa: E402
from addons.catalog import DEFINITIONS  # noqa: E402
from addons.contributions import PARTS  # noqa: E402
from profiles.versions import ChartRef  # noqa: E402
from stacks import contracts  # noqa: E402

# cdktf's own outputs, through which a later layer's stack reads this one's values (not for people).
CROSS_STACK_PREFIX = "cross-stack-output-"
# Each layer's contract, in deploy order (the workloads layer publishes nothing).
LAYER_CONTRACTS = (
    ("cluster", contracts.ClusterOutputs),
    ("storage", contracts.StorageOutputs),
    ("build", contracts.BuildOutputs),
    ("addons", contracts.AddonsOutputs),
)


def _rows(layer: str, contract: type) -> list[tuple[str, str, str]]:
    """(output name, description, notes) for each published field, in the contract's order."""
    rows = []
    for spec in dataclasses.fields(contract):
        optional = "None" in str(spec.type)
        if "records" in spec.metadata:
            for part in PARTS:
                if record := part.records.get(layer):
                    for name, description in record.described_outputs(part.key).values():
                        rows.append((name, description, f"only with the {part.key} add-on"))
            continue
        how = spec.metadata.get("output")
        if how is None:
            continue
        notes = []
        if how.per_key is not None:
            name = how.per_key.format(key="<key>")
            notes.append(f"one per key of {spec.name}")
        else:
            name = spec.name
            if str(spec.type).startswith("dict"):
                notes.append("a map")
        if optional:
            notes.append("only when the profile has it")
        if how.sensitive:
            notes.append("sensitive")
        rows.append((name, how.description or "", "; ".join(notes)))
    return rows


def outputs_page() -> str:
    lines = [
        "# Layer outputs",
        "",
        "<!-- Written by `make reference-docs` from stacks/contracts.py; edit the contracts, not this page. -->",
        "",
        "Each layer publishes these Terraform outputs (`make outputs`, or `terraform output` in",
        "`cdktf.out/<name>/stacks/<layer>`); the layers after it read the same values from its state.",
        f"The `{CROSS_STACK_PREFIX}*` outputs beside them are cdktf's, for those reads.",
    ]
    for layer, contract in LAYER_CONTRACTS:
        lines += ["", f"## {layer}", "", (contract.__doc__ or "").strip().splitlines()[0], ""]
        lines += ["| output | description | notes |", "|---|---|---|"]
        lines += [f"| `{name}` | {description} | {notes} |" for name, description, notes in _rows(layer, contract)]
    return "\n".join(lines) + "\n"


VERSIONS_PAGE = ROOT / "docs" / "versions.md"
PINS_BEGIN = "<!-- pins: written by `make reference-docs` from the add-ons' definitions and profiles/versions.py -->"
PINS_END = "<!-- /pins -->"
# The pins of profiles/versions.py the second table lists: providers, images and AMI types.
OTHER_PIN = re.compile(r"^([A-Z_]+(?:_VERSION|_IMAGE|_AMI_TYPE)) = \"([^\"]+)\"$")


def pin_tables() -> str:
    lines = [
        "| add-on (`addons.<key>`) | what | chart / artifact | pinned | app or image | namespace |",
        "|---|---|---|---|---|---|",
    ]
    for definition in DEFINITIONS:
        pin = definition.pin
        if isinstance(pin, ChartRef):
            source, version, app = f"`{pin.chart}` ({pin.repository})", pin.version, pin.app_version
        else:
            source, version, app = f"{pin.repository} `{pin.path}` (SHA-256 pinned)", pin.tag, f"`{pin.image}`"
        what = definition.description.removesuffix(".")
        lines.append(f"| `{definition.key}` | {what} | {source} | {version} | {app} | `{definition.namespace}` |")
    lines += ["", "| pin (profiles/versions.py) | value | why |", "|---|---|---|"]
    lines += [f"| `{name}` | `{value}` | {why} |" for name, value, why in _other_pins()]
    return "\n".join(lines)


def _other_pins() -> list[tuple[str, str, str]]:
    """(constant, value, the comment above it without Renovate's markers) for each pin line; a pin
    right under another one shares its comment."""
    found: list[tuple[str, str, str]] = []
    comment: list[str] = []
    for line in Path(profiles.versions.__file__).read_text().splitlines():
        match = OTHER_PIN.match(line)
        if line.startswith("# "):
            if not line.startswith("# renovate:"):
                comment.append(line[2:])
        elif match:
            why = " ".join(comment) or (found[-1][2] if found else "")
            found.append((match[1], match[2], why))
            comment = []
        elif not line.strip():
            comment = []
    return found


def versions_page() -> str:
    text = VERSIONS_PAGE.read_text()
    before, rest = text.split(PINS_BEGIN, 1)
    _, after = rest.split(PINS_END, 1)
    return f"{before}{PINS_BEGIN}\n{pin_tables()}\n{PINS_END}{after}"


PAGES = {ROOT / "docs" / "outputs.md": outputs_page, VERSIONS_PAGE: versions_page}


def main() -> int:
    for path, page in PAGES.items():
        path.write_text(page())
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
