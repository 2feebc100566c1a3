"""A profile is plain data: YAML's core types, and text that cannot become code in any output.
The profile model (profiles/models.py) runs this check on the parsed document before any field's
own checks."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

from profiles.base import FieldProblem

TEMPLATE_SEQUENCES = ("${", "%{")
# Characters no profile text needs, and that the outputs cannot all carry as data: the HCL export
# (cdktf's renderer, main.py hcl) writes strings without escaping them, so a double quote or a
# backslash could end a string there, and a line break a heredoc; control and invisible format
# characters (NUL, escapes, bidirectional overrides) and Unicode's line and paragraph separators
# never belong in a name, an ARN, a URL or an image reference either.
UNSAFE_CHARACTERS = '"\\'
UNSAFE_CATEGORIES = ("Cc", "Cf", "Cs", "Zl", "Zp")
# The types YAML's core schema constructs (profiles/loader.py refuses every other tag); a tuple
# stands for a list when a caller builds the document in Python.
PLAIN_TYPES = (str, int, float, bool, type(None), dict, list, tuple)


def _unsafe_character(text: str) -> str | None:
    for char in text:
        if char in UNSAFE_CHARACTERS or unicodedata.category(char) in UNSAFE_CATEGORIES:
            return char
    return None


def text_problems(value: object, path: tuple[str | int, ...]) -> Iterator[FieldProblem]:
    """A problem for every value under `value` (keys included, at every depth) that is not plain
    data: a type outside YAML's core schema, a string with a Terraform template sequence (`${`,
    `%{`) or with a character no profile text may hold (UNSAFE_CHARACTERS, UNSAFE_CATEGORIES)."""
    if not isinstance(value, PLAIN_TYPES):
        yield FieldProblem(
            path,
            value,
            f"a {type(value).__name__} is not profile data",
            allowed="text, numbers, true/false, null, lists and mappings",
        )
    elif isinstance(value, str):
        if any(sequence in value for sequence in TEMPLATE_SEQUENCES):
            yield FieldProblem(
                path,
                value,
                "a Terraform template sequence (${ or %{) is never allowed in a profile",
                allowed="the same text without ${ and %{",
            )
        elif (char := _unsafe_character(value)) is not None:
            name = " ".join(filter(None, (f"U+{ord(char):04X}", unicodedata.name(char, ""))))
            yield FieldProblem(
                path,
                value,
                f"the character {name} ({char!r}) is never allowed in a profile's text",
                allowed="printable text without double quotes, backslashes, line breaks or control characters",
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from text_problems(key, (*path, str(key)))
            yield from text_problems(item, (*path, str(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from text_problems(item, (*path, index))
