"""Every value a layer hands the next is documented: a published field's description is its
Terraform output's description, and a plain field has a docstring."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import ClassVar

import pytest

from addons.contributions import PARTS
from stacks import contracts
from tests.cases import FIXTURES, SHIPPED

CONTRACTS = [contracts.ClusterOutputs, contracts.StorageOutputs, contracts.BuildOutputs, contracts.AddonsOutputs]


def undocumented(source: str) -> list[str]:
    """Fields of the dataclasses in `source` with neither published(description=...) nor a docstring."""
    missing = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef) or not node.name.endswith("Outputs"):
            continue
        for index, item in enumerate(node.body):
            if not isinstance(item, ast.AnnAssign):
                continue
            following = node.body[index + 1] if index + 1 < len(node.body) else None
            has_docstring = isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
            call = getattr(item.value, "func", None)
            published = isinstance(item.value, ast.Call) and getattr(call, "id", "") in (
                "published",
                "published_record",
            )
            described = published and any(k.arg in ("description", "outputs") for k in item.value.keywords)
            if not (described or (not published and has_docstring)):
                missing.append(f"{node.name}.{item.target.id}")  # type: ignore[attr-defined]
    return missing


def test_every_contract_field_is_documented():
    assert undocumented(Path(contracts.__file__).read_text()) == []
    assert {c.__name__ for c in CONTRACTS} == {n for n in dir(contracts) if n.endswith("Outputs")}


def test_the_check_finds_an_undocumented_field():
    source = (
        "class XOutputs:\n    a: str = published(description='d')\n    b: str = published()\n"
        "    c: str\n    d: str\n    '''doc'''\n"
    )
    assert undocumented(source) == ["XOutputs.b", "XOutputs.c"]


@pytest.mark.parametrize("profile", SHIPPED + FIXTURES)
def test_terraform_outputs_carry_the_contract_descriptions(synthesized, profile):
    expected = {}
    for contract in CONTRACTS:
        for spec in dataclasses.fields(contract):
            how = spec.metadata.get("output")
            if how is not None:
                expected[spec.name if how.per_key is None else how.per_key] = how.description
    # Each add-on's records, as its parts declare them for the layer that makes them.
    for part in PARTS:
        for record in part.records.values():
            expected.update(dict(record.described_outputs(part.key).values()))
    for layer in ("cluster", "storage", "build", "addons"):
        for name, output in synthesized.stack(profile, layer).get("output", {}).items():
            if name.startswith("cross-stack-output-"):
                continue
            key = (
                name
                if name in expected
                else next((k for k in expected if "{key}" in k and name.endswith(k.split("}")[-1])), None)
            )
            assert key is not None, f"{layer}.{name} is not a contract field"
            assert output.get("description") == expected[key], f"{layer}.{name}"


def test_a_record_output_is_described_by_its_attribute_docstring():
    """Records (MlflowBackend, KarpenterNodes) document each attribute once; a published attribute
    without a docstring is refused when the record class is defined, not shipped undescribed."""
    from addons.karpenter.nodes import KarpenterNodes

    described = KarpenterNodes.described_outputs("karpenter")
    assert described["interruption_queue"] == (
        "karpenter_interruption_queue",
        "The SQS queue of EC2 interruption warnings Karpenter reads",
    )
    assert contracts.attribute_docstrings(KarpenterNodes)["node_role_name"] == "The IAM role Karpenter's nodes run as"

    with pytest.raises(TypeError, match="no docstring for published attribute"):

        @dataclasses.dataclass
        class Undocumented(contracts.AddonRecord):
            OUTPUTS: ClassVar[dict[str, str]] = {"documented": "a", "bare": "b"}
            documented: str
            """Here."""
            bare: str


def test_an_addon_reads_its_own_record_checked_by_type():
    from addons.karpenter.nodes import KarpenterNodes
    from addons.mlflow.backend import MlflowBackend

    nodes = KarpenterNodes(node_role_name="r", interruption_queue="q")
    assert contracts.addon_record({"karpenter": nodes}, "karpenter", KarpenterNodes) is nodes
    assert contracts.addon_record({}, "karpenter", KarpenterNodes) is None
    with pytest.raises(TypeError, match="karpenter's record is a KarpenterNodes, not a MlflowBackend"):
        contracts.addon_record({"karpenter": nodes}, "karpenter", MlflowBackend)


def test_every_record_an_addon_declares_is_one_its_layer_carries():
    carrying = {"storage": contracts.StorageOutputs, "addons": contracts.AddonsOutputs}
    for part in PARTS:
        for layer, record in part.records.items():
            assert layer in carrying, f"{part.key} declares a record for {layer}, whose contract carries none"
            assert issubclass(record, contracts.AddonRecord)
