"""AWS resources nothing else reads, rendered as data instead of a construct each.

A typed AWS construct costs on three counts: its Python binding module is imported (3-40 ms for
the first of a type), Node loads the type's JavaScript module at the first creation, and each
creation is a jsii round trip, with more to name it. Resources whose attributes nothing reads (a
bucket's companions, a role's policies, security group rules, route associations, event targets)
need none of that: their Terraform JSON is known in Python. A `LeafType` names the Terraform type
and the binding class that would build it; `add` renders the resource as data, under the address
and metadata its construct would have (components/logical_ids.py), into one element per layer
(components/rendered.py) that hands cdktf every such resource of the layer when it synthesizes
the stack. Where a construct per block is wanted (the HCL export, GPU_PLATFORM_PLAIN_CONSTRUCTS=1),
`add` builds the binding's class with the same arguments instead. tests/test_manifests_as_data.py
compares both ways' JSON for every profile, so an argument the binding would not accept, or would
write otherwise, fails there.

Arguments are written in Terraform's JSON form: snake_case names, a nested block as a dict (a
block that holds at most one, like versioning_configuration) or a list of dicts (a repeatable
block, like a lifecycle rule), as the binding writes them.
"""

from __future__ import annotations

import collections.abc
import importlib
import typing
import weakref
from dataclasses import dataclass, field
from typing import Any

from cdktf import ITerraformDependable, TerraformResource, TerraformStack
from constructs import Construct

from components.expressions import holds_interpolation
from components.logical_ids import unique_id
from components.rendered import RenderedAddress, RenderedJson, dependency_addresses, render_as_data

AWS_BINDINGS = "cdktf_cdktf_provider_aws"

# Meta-arguments a leaf never takes here: each would need its own rendering rules (cdktf writes
# them from the construct's own fields), and no leaf needs them.
_UNSUPPORTED_META_ARGUMENTS = frozenset({"count", "for_each", "provider", "lifecycle", "provisioners", "connection"})


@dataclass(frozen=True)
class LeafType:
    """An AWS resource type, rendered as data unless a construct per block is wanted."""

    terraform_type: str
    """Terraform's name of the type, e.g. aws_s3_bucket_versioning."""
    construct: str
    """The class in the provider's bindings that builds it, e.g. S3BucketVersioningA."""
    module: str = ""
    """Its module in the bindings. Default: the type's name without `aws_` (the generator's name
    for most types; a few differ, e.g. lexv2_models_bot_version)."""

    @property
    def binding_module(self) -> str:
        """The full name of the bindings' module that holds `construct`."""
        return f"{AWS_BINDINGS}.{self.module or self.terraform_type.removeprefix('aws_')}"

    def add(
        self,
        scope: Construct,
        id_: str,
        *,
        depends_on: tuple[ITerraformDependable, ...] = (),
        **arguments: Any,
    ) -> ITerraformDependable:
        """Add one resource of this type at `scope/id_`; `arguments` are its Terraform arguments
        (None leaves one out, at any depth, as the binding does). Returns what dependants can depend on.

        Rendered as data, a leaf is no construct: a construct given the same id in the same scope
        is refused only the construct way (the byte comparison of every profile runs it), and two
        leaves of one id in one scope are refused here."""
        if meta := _UNSUPPORTED_META_ARGUMENTS.intersection(arguments):
            raise TypeError(f"{self.terraform_type}: a leaf resource takes no {', '.join(sorted(meta))}")
        if holds_interpolation(id_):  # as cdktf refuses a token in an element's id (its logical id would be unstable)
            raise ValueError(f"{self.terraform_type}: the id {id_!r} holds a token; ids are plain text")
        id_ = id_.replace("/", "--")  # as constructs rewrites a path separator in an id
        arguments = {
            name: _plain(self.terraform_type, name, value) for name, value in arguments.items() if value is not None
        }
        if not render_as_data():
            return self._construct(scope, id_, depends_on=depends_on, arguments=arguments)
        place = _placement(scope)
        path = f"{place.path}/{id_}"
        logical_id = unique_id([*place.below_stack, id_])
        body = dict(arguments)
        if depends_on:
            body["depends_on"] = dependency_addresses(scope, depends_on, stack=place.stack)
        body["//"] = {"metadata": {"path": path, "uniqueId": logical_id}}
        place.layer.add(self.terraform_type, logical_id, path, body)
        return RenderedAddress(f"{self.terraform_type}.{logical_id}", place.stack)

    def _construct(
        self,
        scope: Construct,
        id_: str,
        *,
        depends_on: tuple[ITerraformDependable, ...],
        arguments: dict[str, Any],
    ) -> TerraformResource:
        construct_class = getattr(importlib.import_module(self.binding_module), self.construct)
        hints = typing.get_type_hints(construct_class.__init__)
        unknown = set(arguments) - set(hints)
        if unknown:
            raise TypeError(f"{self.terraform_type} has no argument {', '.join(sorted(unknown))}")
        typed = {name: _as_structs(hints[name], value) for name, value in arguments.items()}
        resource: TerraformResource = construct_class(scope, id_, depends_on=list(depends_on) or None, **typed)
        return resource


@dataclass
class _LayerLeaves:
    """A layer's leaf resources, handed to cdktf by one element at the stack's top."""

    stack: TerraformStack
    stack_path: str
    resources: dict[str, dict[str, Any]] = field(default_factory=dict)
    paths: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        # Filled as leaves are added; cdktf reads it when it synthesizes the stack. No construct
        # of the app has this id.
        RenderedJson(self.stack, "leaf-resources", json={"resource": self.resources})

    def add(self, terraform_type: str, logical_id: str, path: str, body: dict[str, Any]) -> None:
        if path in self.paths:  # as cdktf refuses two constructs of one id in one scope
            raise ValueError(f"there is already a construct at {path}")
        of_type = self.resources.setdefault(terraform_type, {})
        if logical_id in of_type:
            raise ValueError(f"{path}: another {terraform_type} already has the logical id {logical_id}")
        self.paths.add(path)
        of_type[logical_id] = body


@dataclass(frozen=True)
class _Placement:
    """Where leaves added at one scope go: the scope's construct path, its stack and that stack's leaves."""

    path: str
    below_stack: tuple[str, ...]
    """The path's components below the stack (what cdktf's logical id is made of)."""
    stack: TerraformStack
    layer: _LayerLeaves


# Each look-up below is a jsii round trip; a scope typically holds several leaves (a role's
# policies, a bucket's companions), so they are made once per scope, and once per stack. (jsii
# keeps every object it made for the process, so in practice the entries stay as long.)
_PLACEMENTS: weakref.WeakKeyDictionary[Construct, _Placement] = weakref.WeakKeyDictionary()
_LAYERS: weakref.WeakKeyDictionary[TerraformStack, _LayerLeaves] = weakref.WeakKeyDictionary()


def _placement(scope: Construct) -> _Placement:
    if (place := _PLACEMENTS.get(scope)) is None:
        stack = TerraformStack.of(scope)
        if (layer := _LAYERS.get(stack)) is None:
            layer = _LAYERS[stack] = _LayerLeaves(stack, stack.node.path)
        path = scope.node.path
        below_stack = tuple(path.removeprefix(layer.stack_path).split("/")[1:])
        place = _PLACEMENTS[scope] = _Placement(path, below_stack, stack, layer)
    return place


def _plain(terraform_type: str, name: str, value: Any) -> Any:
    """`value` as Terraform JSON: None left out of blocks at every depth (as the binding leaves it
    out), and anything but text, numbers, booleans, blocks (dicts) and lists refused: an object
    such as a dynamic block's iterator would be written as an expression where Terraform expects
    a block, while the binding writes it as a `dynamic` block."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, dict):
        return {key: _plain(terraform_type, f"{name}.{key}", item) for key, item in value.items() if item is not None}
    if isinstance(value, list | tuple):
        return [_plain(terraform_type, f"{name}[{index}]", item) for index, item in enumerate(value)]
    raise TypeError(
        f"{terraform_type}: {name} is a {type(value).__name__}; a leaf takes text (tokens included), "
        "numbers, booleans, blocks as dicts and lists"
    )


def _as_structs(hint: Any, value: Any) -> Any:
    """`value` with each nested block (a dict) made the binding's struct that `hint` names: jsii
    turns a dict into a struct only for a top-level argument, and would send a nested one with
    its snake_case keys unread (the binding reads camelCase properties), so the block's
    multi-word arguments would be lost."""
    if isinstance(value, dict):
        if (struct := _struct_in(hint)) is not None:
            fields = typing.get_type_hints(struct.__init__)
            if unknown := set(value) - set(fields):
                raise TypeError(f"{struct.__name__} has no argument {', '.join(sorted(unknown))}")
            return struct(**{name: _as_structs(fields[name], item) for name, item in value.items()})
        if _alternative(hint, _SEQUENCES) is not None and _alternative(hint, _MAPPINGS) is None:
            raise TypeError(f"a repeatable block is given as one dict, not a list of them: {value}")
        # A map argument: its values as its hint says (a map of blocks, or plain values as in tags).
        values = _alternative(hint, _MAPPINGS)
        return {key: _as_structs(values, item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_as_structs(_alternative(hint, _SEQUENCES), item) for item in value]
    return value


_SEQUENCES = (list, tuple, collections.abc.Sequence)
_MAPPINGS = (dict, collections.abc.Mapping)


def _alternatives(hint: Any) -> collections.abc.Iterator[Any]:
    """`hint` and, for a union (Union[Struct, Dict[str, Any], None]), each of its members, at any depth."""
    if typing.get_origin(hint) is typing.Union:
        for member in typing.get_args(hint):
            yield from _alternatives(member)
    else:
        yield hint


def _struct_in(hint: Any) -> Any:
    """The jsii struct class among a hint's alternatives, or None. A struct inside a sequence or a
    map hint is not the hint's own: it is its items'."""
    return next((h for h in _alternatives(hint) if isinstance(h, type) and hasattr(h, "__jsii_struct_bases__")), None)


def _alternative(hint: Any, origins: tuple[type, ...]) -> Any:
    """The item hint (of a sequence) or value hint (of a map) among a hint's alternatives, e.g.
    Union[IResolvable, Sequence[X]] gives X, Mapping[str, Y] gives Y; None if there is none."""
    return next((typing.get_args(h)[-1] for h in _alternatives(hint) if typing.get_origin(h) in origins), None)
