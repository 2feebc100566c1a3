"""Messages for a terminal: short lines, the fix first.

A message is written as lines: its first line says what to do, the lines after it why. Each line
is wrapped at WIDTH; a line that starts with "- " is a list item (its wrapped lines indented under
it) and one that starts with two spaces is a command to copy: it is kept whole, and a command
longer than WIDTH is continued at its options (` \\`), as one would type it.
"""

from __future__ import annotations

import textwrap

WIDTH = 100


def wrap(text: str, width: int = WIDTH) -> list[str]:
    """`text` as lines of at most `width` characters (a single word longer than that is kept)."""
    lines: list[str] = []
    for line in text.splitlines() or [""]:
        if line.startswith("  "):
            lines += _command(line, width)
        elif line.startswith("- "):
            lines += _paragraph(line[2:], width, first="- ", rest="  ")
        else:
            lines += _paragraph(line, width)
    return lines


def bullet(text: str, width: int = WIDTH) -> list[str]:
    """`text` as an item of a list: `  - ` before its first line, its other lines under it."""
    inner = wrap(text, width - 4)
    return [("  - " if index == 0 else "    ") + line for index, line in enumerate(inner)]


def _paragraph(line: str, width: int, first: str = "", rest: str = "") -> list[str]:
    return textwrap.wrap(
        line,
        width,
        initial_indent=first,
        subsequent_indent=rest,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [first.rstrip()]


def _command(line: str, width: int) -> list[str]:
    """A shell command, continued before its options where it is longer than `width`."""
    if len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    words = line.strip().split(" --")
    lines, current = [], indent + words[0]
    for option in words[1:]:
        if len(current) + len(option) + 5 <= width:  # " --" + option + " \\"
            current += " --" + option
        else:
            lines.append(current + " \\")
            current = f"{indent}  --{option}"
    return [*lines, current]
