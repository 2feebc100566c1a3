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


# Plain scalars resolve by YAML 1.2's core schema; a form YAML 1.1 (PyYAML, and so many tools) reads
# as another value is refused with both readings and how to write it (profiles/yaml_core.py).
# Each case: (YAML under `cluster.system_node_group:` or the top, the path, words in the refusal).
YAML11_FORMS = [
    ("octal", "max_size: 010", "reads 010 as the number 8, YAML 1.2 as 10", "10, without the leading zero"),
    ("leading-zero-9", "max_size: 09", "YAML 1.2 as 9", "9, without the leading zero"),
    ("negative-octal", "max_size: -010", "reads -010 as the number -8", "-10, without the leading zero"),
    ("sexagesimal", "max_size: 1:0", "reads 1:0 as the number 60, YAML 1.2 as the text '1:0'", "60, in plain decimal"),
    ("hex", "max_size: 0x2", "a number in hexadecimal", "2, or '0x2' in quotes"),
    ("octal-1.2", "max_size: 0o7", "a number in octal, which YAML 1.2 reads as 7", "7, or '0o7' in quotes"),
    ("binary", "max_size: 0b10", "reads 0b10 as the number 2", "2, in plain decimal"),
    ("underscore", "max_size: 1_0", "reads 1_0 as the number 10", "10, in plain decimal"),
    ("plus", "max_size: +2", "a number with a + sign", "2, without the sign"),
    ("plus-float", "max_size: +2.5", "a number with a + sign", "2.5, without the sign"),
    ("float-underscore", "max_size: 1_0.5", "reads 1_0.5 as the number 10.5", "10.5, in plain decimal"),
    ("float-sexagesimal", "max_size: 1:30.5", "reads 1:30.5 as the number 90.5", "90.5, in plain decimal"),
    ("exponent-1.2", "max_size: 1e3", "reads 1e3 as the text '1e3', YAML 1.2 as the number 1000.0", "1000.0"),
    ("huge", "max_size: " + "9" * 5000, "a number of 5000 characters", "a number of at most 19 digits"),
    ("off", "protect_from_destroy: off", "reads off as false, YAML 1.2 as the text 'off'", "false for true/false"),
    ("NO", "protect_from_destroy: NO", "reads NO as false", "false for true/false, or 'NO' in quotes"),
    ("On", "protect_from_destroy: On", "reads On as true", "true for true/false"),
    ("yes", "protect_from_destroy: yes", "reads yes as true", "true for true/false"),
    ("key", "tags:\n  on: x", "reads on as true", "true for true/false, or 'on' in quotes for text"),
]


@pytest.mark.parametrize("name, line, reading, allowed", YAML11_FORMS, ids=[c[0] for c in YAML11_FORMS])
def test_yaml_1_1_forms_are_refused_with_both_readings(tmp_path, name, line, reading, allowed):
    top = line.startswith(("protect_from_destroy", "tags"))
    text = (
        ("storage:\n  " + line if line.startswith("protect") else line)
        if top
        else "cluster:\n  system_node_group:\n    " + line
    )
    path = {"protect_from_destroy": "storage.protect_from_destroy", "tags": "tags.on"}.get(
        line.split(":")[0], "cluster.system_node_group.max_size"
    )
    profile = tmp_path / f"{name}.yaml"
    profile.write_text("name: yaml-forms\nregion: us-east-1\n" + text + "\n")
    with pytest.raises(ProfileError) as error:
        load_profile(str(profile))
    [problem] = error.value.problems
    assert problem.startswith(f"{path}: ") and reading in problem and f"allowed: {allowed}" in problem, problem
    assert "on line " in problem, problem


def test_yaml_1_2_core_plain_values_load():
    from profiles.loader import parse_profile_text

    text = b"a: [1, -3, 0, -0, 10, true, True, TRUE, false, False, FALSE, null, Null, NULL, ~, 0.5, .5, 1., 1.5e+3]\nb:"
    assert parse_profile_text(text, "t") == {
        "a": [1, -3, 0, 0, 10, True, True, True, False, False, False, None, None, None, None, 0.5, 0.5, 1.0, 1500.0],
        "b": None,
    }
    # Quoted, each form is the text it reads as.
    quoted = b"a: ['010', '1:0', '0x2', 'off', 'yes', '+2']"
    assert parse_profile_text(quoted, "t")["a"] == ["010", "1:0", "0x2", "off", "yes", "+2"]


# An explicit core tag on a value outside its YAML 1.2 form: a refusal naming field and line, never
# a Python error (SafeLoader raised ValueError, KeyError, IndexError) or a dropped value (!!null).
BAD_CORE_TAGS = [
    ("int-float", "max_size: !!int 2.0", "!!int '2.0' is not a value of that tag"),
    ("int-empty", "max_size: !!int ''", "!!int '' is not a value of that tag"),
    ("int-octal", "max_size: !!int 010", "!!int '010' is not a value of that tag"),
    ("int-sexagesimal", "max_size: !!int 1:0", "!!int '1:0' is not a value of that tag"),
    ("int-huge", "max_size: !!int " + "9" * 5000, "is not a value of that tag"),
    ("float-text", "max_size: !!float abc", "!!float 'abc' is not a value of that tag"),
    ("float-underscore", "max_size: !!float 1_0", "!!float '1_0' is not a value of that tag"),
    ("bool-maybe", "max_size: !!bool maybe", "!!bool 'maybe' is not a value of that tag"),
    ("bool-yes", "max_size: !!bool yes", "!!bool 'yes' is not a value of that tag"),
    ("null-text", "max_size: !!null '1234'", "!!null '1234' is not a value of that tag"),
]


@pytest.mark.parametrize("name, line, words", BAD_CORE_TAGS, ids=[c[0] for c in BAD_CORE_TAGS])
def test_a_core_tag_on_a_value_outside_its_form_is_refused(tmp_path, name, line, words):
    profile = tmp_path / f"{name}.yaml"
    profile.write_text("name: tags\nregion: us-east-1\ncluster:\n  system_node_group:\n    " + line + "\n")
    with pytest.raises(ProfileError) as error:
        load_profile(str(profile))
    [problem] = error.value.problems
    assert problem.startswith("cluster.system_node_group.max_size: ") and words in problem, problem
    assert "on line 5," in problem and "allowed: " in problem, problem


def test_an_account_id_tagged_null_is_refused_not_dropped(tmp_path):
    profile = tmp_path / "null-account.yaml"
    profile.write_text("name: tags\nregion: us-east-1\naccount_id: !!null '123456789012'\n")
    with pytest.raises(ProfileError) as error:
        load_profile(str(profile))
    [problem] = error.value.problems
    assert problem.startswith("account_id: !!null '123456789012' is not a value of that tag"), problem
