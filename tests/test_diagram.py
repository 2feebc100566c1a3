"""The README's layers diagram is the synthesized default profile, and the remote-state edges it
draws respect the deploy order (a layer reads only layers deployed before it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from operate.diagram import README_END, README_START, mermaid, remote_state_edges, replace_in_readme
from profiles import DEFAULT_PROFILE
from stacks import LAYERS
from tests.cases import FIXTURES, SHIPPED

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_diagram_is_the_synthesized_default_profile(synthesized):
    text = README.read_text()
    block = text.split(README_START, 1)[1].split(README_END, 1)[0]
    expected = mermaid(synthesized.stacks[DEFAULT_PROFILE])
    assert block.strip() == f"```mermaid\n{expected}```", "stale diagram: run `make diagram`"


@pytest.mark.parametrize("profile", SHIPPED + FIXTURES)
def test_layers_read_only_outputs_of_layers_deployed_before_them(synthesized, profile):
    stacks = synthesized.stacks[profile]
    edges = remote_state_edges(stacks)
    assert edges, "no remote-state edge found: the reader is not looking where cdktf writes them"
    for producer, consumer, outputs in edges:
        assert LAYERS.index(producer) < LAYERS.index(consumer), f"{consumer} reads {producer}, deployed after it"
        assert outputs and not any(name.startswith("cross-stack-output-") for name in outputs), (
            f"{consumer} reads outputs {producer} does not declare: {outputs}"
        )


def test_every_layer_is_drawn_with_its_main_resources(synthesized):
    picture = mermaid(synthesized.stacks["p5-training"])
    for layer in LAYERS:
        assert f'subgraph {layer}["{layer} layer"]' in picture
    assert 'cluster_aws_eks_cluster["EKS cluster"]' in picture
    assert "storage_aws_fsx_lustre_file_system" in picture
    assert picture.count(" --> ") == len(remote_state_edges(synthesized.stacks["p5-training"]))


def test_readme_without_markers_is_an_error_not_a_silent_append():
    with pytest.raises(ValueError, match=r"no .* block"):
        replace_in_readme("# a README\n", "flowchart LR\n")
    replaced = replace_in_readme(f"a\n{README_START}\nold\n{README_END}\nb\n", "flowchart LR\n")
    assert replaced == f"a\n{README_START}\n```mermaid\nflowchart LR\n```\n{README_END}\nb\n"
