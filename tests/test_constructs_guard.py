"""A folder named `constructs` anywhere in the project would shadow the library cdktf needs."""

from pathlib import Path

import constructs

ROOT = Path(__file__).resolve().parents[1]


def test_constructs_resolves_to_the_library():
    location = Path(constructs.__file__).resolve()
    assert "site-packages" in location.parts, f"`import constructs` resolved to {location}"
    assert hasattr(constructs, "Construct")


def test_no_project_folder_is_named_constructs():
    offenders = [
        path
        for path in ROOT.rglob("constructs")
        if not {".venv", ".tools", ".cache", "node_modules"} & set(path.relative_to(ROOT).parts)
    ]
    assert offenders == []
