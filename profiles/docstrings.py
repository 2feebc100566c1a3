"""The string written under a class attribute: how the profile models and the layers' records
document their fields once, for code, the profile's JSON schema and the Terraform outputs.

Read from the source with `ast`, each module parsed once per process. Pydantic can do this itself
(`use_attribute_docstrings`), but it tokenizes the source again for every model class as the class
is created: about a tenth of a second of every command's start, for descriptions only the schema
(`main.py schema`, editors) and the reference docs read.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import sys
import textwrap

# Bases whose own attributes are not the project's to document (pydantic's BaseModel documents its
# internals the same way).
_LIBRARIES = frozenset({"builtins", "typing", "pydantic"})


@functools.cache
def _class_bodies(module: str) -> dict[str, list[ast.stmt]]:
    """Every class body of a module's source, by qualified name."""
    source = inspect.getsource(sys.modules[module])
    bodies: dict[str, list[ast.stmt]] = {}

    def visit(nodes: list[ast.stmt], prefix: str) -> None:
        for node in nodes:
            if isinstance(node, ast.ClassDef):
                bodies[prefix + node.name] = node.body
                visit(node.body, f"{prefix}{node.name}.")

    visit(ast.parse(source).body, "")
    return bodies


def own_attribute_docstrings(cls: type) -> dict[str, str]:
    """Attribute -> the string literal under it, for the attributes `cls`'s own body annotates
    (cleaned as `inspect.cleandoc` cleans a docstring)."""
    body = _class_bodies(cls.__module__).get(cls.__qualname__)
    if body is None:  # a class made inside a function: its own source
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs = {}
    for item, following in itertools.pairwise(body):
        if (
            isinstance(item, ast.AnnAssign)
            and isinstance(item.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[item.target.id] = inspect.cleandoc(following.value.value)
    return docs


def attribute_docstrings(cls: type) -> dict[str, str]:
    """Attribute -> its docstring, inherited ones included (a subclass's own wins)."""
    docs: dict[str, str] = {}
    for base in reversed(cls.__mro__):
        if base.__module__ in sys.modules and base.__module__.partition(".")[0] not in _LIBRARIES:
            try:
                docs.update(own_attribute_docstrings(base))
            except (OSError, TypeError):  # no source (a built-in or generated class)
                continue
    return docs
