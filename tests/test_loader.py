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


# A profile is plain data by construction: YAML's core types only. Each case is (name, YAML line
# under a valid profile's `cluster:` or at the top, the field path and line the refusal names).
HOSTILE = '${file("/etc/hostname")}'
TAGGED = [
    ("binary", "name: !!binary JHtmaWxlKCIvZXRjL2hvc3RuYW1lIil9\n", "name", 1, "!!binary"),  # base64 of HOSTILE
    ("set", "tags: !!set {a}\n", "tags", 1, "!!set"),
    ("set-in-a-list", "cluster:\n  admin_principal_arns: [!!set {x}]\n", "cluster.admin_principal_arns.0", 2, "!!set"),
    (
        "timestamp",
        "cluster:\n  ami_release_version: !!timestamp 2026-01-01\n",
        "cluster.ami_release_version",
        2,
        "!!timestamp",
    ),
    ("omap", "tags: !!omap [{a: b}]\n", "tags", 1, "!!omap"),
    ("pairs", "tags: !!pairs [{a: b}]\n", "tags", 1, "!!pairs"),
    ("python-object", "name: !!python/object/apply:os.system [id]\n", "name", 1, "!!python/object/apply:os.system"),
    ("python-name", "name: !!python/name:os.system\n", "name", 1, "!!python/name:os.system"),
    ("custom", "region: !Ref us-east-1\n", "region", 1, "!Ref"),
    ("custom-uri", "region: !<tag:example.com,2026:x> us-east-1\n", "region", 1, "tag:example.com,2026:x"),
    ("tagged-key", "tags:\n  ? !!binary eA==\n  : v\n", "tags.eA==", 2, "!!binary"),
    ("merge", "tags: &t {a: b}\ncluster:\n  <<: *t\n", "cluster.<<", 3, "merge key"),
    ("value-key", "name: =\n", "name", 1, "value key"),
]


@pytest.mark.parametrize("name, line, path, number, words", TAGGED, ids=[c[0] for c in TAGGED])
def test_every_tag_outside_the_core_schema_is_refused_naming_field_and_line(tmp_path, name, line, path, number, words):
    """`!!binary` and `!!set` once carried `${...}` past the template check (pydantic made them a
    str and a list again); every other non-core tag is refused the same way, before any field."""
    profile = tmp_path / f"{name}.yaml"
    profile.write_text(line)
    with pytest.raises(ProfileError) as error:
        load_profile(str(profile))
    [problem] = error.value.problems
    assert problem.startswith(f"{path}: ") and f"on line {number}," in problem and words in problem, problem
    assert "allowed: " in problem


def test_core_tags_and_plain_values_still_load(tmp_path):
    from profiles.loader import parse_profile_text

    text = (
        b"a: !!str 2026-01-01\nb: !!int '12'\nc: !!float 1.5\nd: !!bool true\ne: !!null ''\nf: !!seq [x]\ng: !!map {}\n"
    )
    assert parse_profile_text(text, "t") == {
        "a": "2026-01-01",
        "b": 12,
        "c": 1.5,
        "d": True,
        "e": None,
        "f": ["x"],
        "g": {},
    }


def test_unquoted_dates_and_times_stay_text():
    """YAML 1.1 (SafeLoader) resolves an unquoted 2026-01-01 to a date: a profile keeps it as the
    text it reads as; the one field that takes a time (a Capacity Block's ends_at) parses it."""
    from profiles.loader import parse_profile_text

    parsed = parse_profile_text(b"a: 2026-01-01\nb: 2026-01-01T10:00:00Z\nc: 2026-01-01 10:00:00\n", "t")
    assert parsed == {"a": "2026-01-01", "b": "2026-01-01T10:00:00Z", "c": "2026-01-01 10:00:00"}
    block = load_profile("tests/fixtures/profiles/capacity-block.yaml").cluster.gpu_node_groups[0].capacity
    assert block.ends_at.isoformat() == "2099-03-01T11:30:00+00:00"


def test_a_date_in_a_text_field_is_refused_as_the_text_it_is(tmp_path):
    profile = tmp_path / "dated.yaml"
    profile.write_text(
        "name: 2026-01-01\nregion: us-east-1\ncluster: {vpc: {availability_zones: [us-east-1a, us-east-1b]}}\n"
    )
    with pytest.raises(ProfileError) as error:
        load_profile(str(profile))
    assert any(p.startswith("name: not in the expected form (got '2026-01-01';") for p in error.value.problems), (
        error.value.problems
    )
