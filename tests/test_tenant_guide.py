"""A tenant's day-one page (operate/tenant_guide.py): docs/tenants.md is exactly what the command
writes for p5-training, every example it points at exists in docs/queues.md under that name and
kind, and every object it names is one the layers create."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from main import main
from operate.tenant_guide import tenant_guide
from profiles import load_profile, validate_profile
from tests.synth_helpers import resources
from tests.test_profiles import BASE, changed

ROOT = Path(__file__).resolve().parents[1]
JARK = ROOT / "tests" / "fixtures" / "profiles" / "jark.yaml"


def test_docs_tenants_page_is_what_the_command_writes():
    page = (ROOT / "docs" / "tenants.md").read_text()
    header, _, body = page.partition("-->\n\n")
    assert "make tenant-guide PROFILE=p5-training TENANT=ml-team" in header
    assert body == tenant_guide(load_profile("p5-training"), "ml-team"), (
        "docs/tenants.md is stale: rewrite its body with "
        "`.venv/bin/python main.py tenant-guide --profile p5-training --tenant ml-team`"
    )


def test_every_example_the_page_names_is_in_docs_queues_under_that_name():
    guide = tenant_guide(load_profile("p5-training"), "ml-team")
    queues = (ROOT / "docs" / "queues.md").read_text()
    headings = re.findall(r"^## (.+)$", queues, re.MULTILINE)
    referenced = re.findall(r'docs/queues\.md, "([^"]+)"', guide)
    assert len(referenced) == 4  # p5-training runs the MPI Operator, Trainer and KubeRay
    for section in referenced:
        assert any(heading.startswith(section) for heading in headings), f"no section {section!r} in docs/queues.md"
    examples = {
        (doc["kind"].lower(), doc["metadata"]["name"])
        for block in re.findall(r"```yaml\n(.*?)```", queues, re.DOTALL)
        for doc in yaml.safe_load_all(block)
        if isinstance(doc, dict) and "kind" in doc
    }
    watched = set(re.findall(r"kubectl -n ml-team get (mpijob|trainjob|rayjob) (\S+)", guide))
    assert watched and watched <= examples
    assert ("job", "gpu-check") in examples and "logs -f job/gpu-check" in guide


def test_the_queue_and_service_account_the_page_names_exist_in_the_tenant_namespace(synthesized):
    guide = tenant_guide(load_profile("p5-training"), "ml-team")
    objects = {
        (body["manifest"]["kind"], body["manifest"]["metadata"].get("namespace"), body["manifest"]["metadata"]["name"])
        for body in resources(synthesized.stack("p5-training", "workloads"), "kubernetes_manifest").values()
    }
    (queue,) = re.findall(r"get localqueue (\S+)", guide)
    assert ("LocalQueue", "ml-team", queue) in objects
    (account,) = re.findall(r"the service account `([^`]+)`", guide)
    assert ("ServiceAccount", "ml-team", account) in objects
    for claim in re.findall(r"\(claim `([^`]+)`", guide):
        assert ("PersistentVolumeClaim", "ml-team", claim) in objects, claim


def test_the_page_follows_the_profile_add_ons_and_people():
    jark = load_profile(str(JARK))
    tenant = jark.workloads.tenants[0]
    guide = tenant_guide(jark, tenant.name)
    assert "kubectl -n jupyterhub port-forward svc/proxy-public 8080:80" in guide
    assert f"lists {len(tenant.editors)} editor(s) and {len(tenant.viewers)} viewer(s)" in guide
    plain = tenant_guide(validate_profile(changed(BASE, addons__kueue__enabled=False)), "ml-team")
    assert "No add-on queues jobs on this profile" in plain and "localqueue" not in plain
    assert "MLflow" not in tenant_guide(validate_profile(changed(BASE, addons__mlflow__enabled=False)), "ml-team")


def test_an_unknown_tenant_names_the_known_ones(capsys):
    assert main(["tenant-guide", "--profile", "p5-training", "--tenant", "ml-tem"]) == 2
    assert "has no tenant 'ml-tem' (its tenants: ml-team)" in capsys.readouterr().err


def test_the_readme_tenants_example_is_a_valid_profile_fragment():
    readme = (ROOT / "README.md").read_text()
    (block,) = [b for b in re.findall(r"`(workloads: \{tenants: .*?)`$", readme, re.MULTILINE)]
    config = validate_profile(changed(BASE, **yaml.safe_load(block)))
    (tenant,) = config.workloads.tenants
    assert tenant.editors and tenant.gpu_quota == 16


@pytest.mark.parametrize("profile", ["gpu-validation", "p5-training", "p5en-training"])
def test_every_shipped_profile_has_a_page_for_each_tenant(profile):
    config = load_profile(profile)
    for tenant in config.workloads.tenants:
        assert tenant_guide(config, tenant.name).startswith(f"# Day one for tenant `{tenant.name}`")
