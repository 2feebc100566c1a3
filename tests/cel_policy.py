"""What the API server does with a request that ValidatingAdmissionPolicies match, for the parts
the platform's policies use, their CEL evaluated by cel-python (celpy). Kubernetes source, from
staging/src/k8s.io/apiserver/pkg (admission/plugin/policy/validating/validator.go, Validate):

- A binding puts its policy on a request when the policy's matchConstraints.resourceRules match its
  group, version, resource and operation and the binding's matchResources.namespaceSelector matches
  the namespace's labels (matchPolicy Equivalent, objectSelector {} and the policy's own
  namespaceSelector {} are the API server's defaults).
- matchConditions must all be true; one that errs refuses the request under failurePolicy Fail.
- Validations in order: `true` admits; `false` refuses with the messageExpression's string (its
  error, a non-string, an empty or a multi-line string, or one over 5 KiB falls back to `message`,
  then to "failed expression: ..."); an error refuses under failurePolicy Fail. Variables are
  evaluated when a validation first uses them; here all are evaluated first, and one that errs is
  kept as its error, which refuses only a validation that uses it.

Kubernetes' CEL base environment has libraries cel-python lacks; the policies use these, provided
to celpy below with Kubernetes' semantics (cel/library/quantity.go and lists.go, in the base
environment since 1.28 and 1.0, cel/environment/base.go). cel-python's own non-standard macros
(`reduce`, and `min` as a macro) are no part of Kubernetes' CEL: the policies use neither.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import celpy
from celpy import celtypes

from tests.kueue_model import selector_matches

# resource.ParseQuantity's grammar (apimachinery pkg/api/resource/quantity.go): a signed decimal
# number, then a binary suffix (Ki..Ei), a decimal one (n, u, m, "", k, M, G, T, P, E) or an exponent.
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
MAX_MESSAGE_BYTES = 5 * 1024  # celconfig.MaxEvaluatedMessageExpressionSizeBytes


@dataclass(frozen=True)
class Quantity:
    """A Kubernetes resource.Quantity, exactly."""

    value: Fraction


def quantity(text: Any) -> Quantity:
    """quantity(<string>): ParseQuantity, an error for anything else (stringToQuantity)."""
    if not isinstance(text, str):
        raise TypeError("no such overload")
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(f"quantities must match the regular expression: {text!r}")
    number, suffix = Fraction(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return Quantity(number * 2 ** _BINARY[suffix])
    exponent = _DECIMAL[suffix] if suffix in _DECIMAL else int(suffix[1:])
    return Quantity(number * Fraction(10) ** exponent)


def as_integer(value: Any) -> celtypes.IntType:
    """<Quantity>.asInteger(): AsInt64, an error "cannot convert value to integer" where the value
    is not a whole number or is beyond int64 (quantityGetValue)."""
    if not isinstance(value, Quantity):
        raise TypeError("no such overload")
    if value.value.denominator != 1 or not -(2**63) <= value.value.numerator < 2**63:
        raise ValueError("cannot convert value to integer")
    return celtypes.IntType(value.value.numerator)


def list_sum(values: Any) -> Any:
    """<list>.sum(): the elements added up, the zero of the list's type (int here) for none."""
    if not isinstance(values, list):  # celpy concatenates lists into plain ones
        raise TypeError("no such overload")
    total: Any = celtypes.IntType(0)
    for value in values:
        total = total + value
    return total


def list_max(values: Any) -> Any:
    """<list>.max(): the largest element; an error for an empty list ("max called on empty list")."""
    if not isinstance(values, list):  # celpy concatenates lists into plain ones
        raise TypeError("no such overload")
    if not values:
        raise ValueError("max called on empty list")
    return max(values)


def list_index_of(values: Any, item: Any) -> celtypes.IntType:
    """<list>.indexOf(<T>): the first index whose element equals `item`, else -1."""
    if not isinstance(values, list):  # celpy concatenates lists into plain ones
        raise TypeError("no such overload")
    return celtypes.IntType(next((index for index, value in enumerate(values) if value == item), -1))


KUBERNETES_LIBRARIES: dict[str, Callable[..., Any]] = {
    "quantity": quantity,
    "asInteger": as_integer,
    "sum": list_sum,
    "max": list_max,
    "indexOf": list_index_of,
}

_ENVIRONMENT = celpy.Environment()


def evaluate(expression: str, activation: dict[str, Any]) -> Any:
    """The expression's value, or the CELEvalError it ends in."""
    program = _ENVIRONMENT.program(_ENVIRONMENT.compile(expression), functions=KUBERNETES_LIBRARIES)
    try:
        return program.evaluate(activation)
    except celpy.CELEvalError as error:
        return error


def to_cel(value: Any) -> Any:
    return celpy.json_to_cel(value)


@dataclass(frozen=True)
class Request:
    """One admission request, as the policies see it."""

    operation: str
    group: str
    version: str
    resource: str
    kind: str
    namespace_labels: dict[str, str]
    object: dict[str, Any]
    old_object: dict[str, Any] | None = None

    def activation(self) -> dict[str, Any]:
        request = {
            "operation": self.operation,
            "kind": {"group": self.group, "version": self.version, "kind": self.kind},
            "resource": {"group": self.group, "version": self.version, "resource": self.resource},
            "namespace": self.object.get("metadata", {}).get("namespace", ""),
        }
        return {
            "request": to_cel(request),
            "object": to_cel(self.object),
            "oldObject": to_cel(self.old_object),
        }


def _rule_matches(rule: dict[str, Any], request: Request) -> bool:
    def has(values: list[str], value: str) -> bool:
        return "*" in values or value in values

    return (
        has(rule["apiGroups"], request.group)
        and has(rule["apiVersions"], request.version)
        and has(rule["operations"], request.operation)
        and has(rule["resources"], request.resource)
    )


def policy_refusals(policy: dict[str, Any], request: Request) -> list[str]:
    """The messages of the policy's refusals of `request` (it matches; empty: admitted)."""
    spec = policy["spec"]
    fail = spec.get("failurePolicy", "Fail") == "Fail"
    activation = request.activation()
    for condition in spec.get("matchConditions", []):
        matched = evaluate(condition["expression"], activation)
        if isinstance(matched, celpy.CELEvalError):
            return [f"matchCondition {condition['name']}: {matched}"] if fail else []
        if matched is not True and matched != celtypes.BoolType(True):
            return []
    values = celtypes.MapType()
    activation["variables"] = values
    for variable in spec.get("variables", []):
        values[celtypes.StringType(variable["name"])] = evaluate(variable["expression"], activation)
    refusals = []
    for validation in spec["validations"]:
        result = evaluate(validation["expression"], activation)
        if isinstance(result, celpy.CELEvalError):
            if fail:
                refusals.append(f"expression '{validation['expression']}' resulted in error: {result}")
            continue
        if result == celtypes.BoolType(True):
            continue
        message = ""
        if "messageExpression" in validation:
            text = evaluate(validation["messageExpression"], activation)
            if isinstance(text, str):  # celpy concatenates strings into plain ones
                message = str(text).strip()
                if len(message.encode()) > MAX_MESSAGE_BYTES or "\n" in message:
                    message = ""
        message = message or validation.get("message", "").strip() or f"failed expression: {validation['expression']}"
        refusals.append(message)
    return refusals


def refusals(objects: list[dict[str, Any]], request: Request) -> list[str]:
    """What the API server says when it refuses `request` under the policies and bindings of
    `objects`: one message per failed validation of each bound policy (empty: admitted)."""
    policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
    found = []
    for binding in (o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"):
        policy = policies[binding["spec"]["policyName"]]
        if not any(_rule_matches(rule, request) for rule in policy["spec"]["matchConstraints"]["resourceRules"]):
            continue
        resources = binding["spec"].get("matchResources", {})
        if not selector_matches(resources.get("namespaceSelector"), request.namespace_labels):
            continue
        assert "Deny" in binding["spec"]["validationActions"]
        found += policy_refusals(policy, request)
    return found
