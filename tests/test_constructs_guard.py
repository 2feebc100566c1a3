"""A folder named `constructs` anywhere in the project would shadow the library cdktf needs."""

from pathlib import Path

import constructs

ROOT = Path(__file__).resolve().parents[1]


def test_constructs_resolves_to_the_library():
    location = Path(constructs.__file__).resolve()
    assert "site-packages" in location.parts, f"`import constructs` resolved to {location}"
    assert hasattr(constructs, "Construct")


def test_no_project_folder_is_named_constructs():
    # The environments and caches (.venv, .tools, .cache) are other people's packages, and hundreds
    # of thousands of files: walk only the project's own folders.
    offenders = [
        path
        for top in ROOT.iterdir()
        if top.is_dir() and not top.name.startswith(".") and top.name not in ("node_modules", "cdktf.out")
        for path in [top, *top.rglob("constructs")]
        if path.name == "constructs"
    ]
    assert offenders == []
