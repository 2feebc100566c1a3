"""Any file content gives a clean ProfileError naming the file (exit 2 from the CLI), fast."""

from __future__ import annotations

import time

import pytest

from profiles import ProfileError, load_profile
from profiles.loader import MAX_DEPTH

BOMB = (
    "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
    "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
)

CASES = [
    ("binary", bytes(range(256)) * 4, "not UTF-8 text"),
    ("utf16", "name: x\nregion: us-east-1\n".encode("utf-16"), "not UTF-8 text"),
    ("latin1", "name: café\n".encode("latin-1"), "not UTF-8 text"),
    ("nul", b"name: x\x00\n", "NUL"),
    ("deep", ("a: " + "[" * 2000 + "]" * 2000 + "\n").encode(), f"nested deeper than {MAX_DEPTH} levels"),
    ("bomb", BOMB.encode(), "alias"),
    (
        "duplicate",
        b"name: one\nregion: us-east-1\nname: two\n",
        "line 3, column 1: duplicate key 'name' (first on line 1)",
    ),
    ("list", b"- name: x\n", "must be a YAML mapping of settings (name: value lines), not a list"),
    ("empty", b"", "the profile is empty"),
    ("comment-only", b"# nothing here\n", "the profile is empty"),
    ("syntax", b"name: x\n  region: [us-east-1\n", "not valid YAML: line 2"),
    ("scalar", b"just text\n", "mapping of settings (name: value lines), not a line of text"),
]


@pytest.mark.parametrize("name, content, words", CASES, ids=[c[0] for c in CASES])
def test_any_content_is_a_clean_error_naming_the_file(tmp_path, name, content, words):
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(content)
    # The loader's own work, in CPU time: a bomb must not make it spin. Wall time would also count
    # the CPU the emulated cycles take meanwhile (the rest of the suite yields it to them).
    started = time.process_time()
    with pytest.raises(ProfileError) as error:
        load_profile(str(path))
    assert time.process_time() - started < 1.0, "rejected within a second of CPU"
    assert error.value.source == str(path)
    rendered = error.value.render()
    assert rendered.startswith(f"profile {path} is not valid") and words in rendered, rendered


def test_a_missing_profile_is_not_found_with_a_suggestion():
    with pytest.raises(ProfileError) as error:
        load_profile("p5-trainig")
    assert error.value.render().startswith("profile p5-trainig not found:")
    assert "did you mean 'p5-training'?" in error.value.render()
