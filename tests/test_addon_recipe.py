"""The maintainer's guide's "Adding an add-on" recipe, followed word for word in a temporary copy
of the repository: the new add-on validates (good and bad values), is in the schema, is closed to
tenants, and synthesizes into a guarded namespace. Starts its own jsii runtime (ordered late)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from tests.repo_copy import copy_repository
from tests.test_addon_registry import recipe

# Run in the copy: validation (good and bad values), the schema, the tenant-namespace rule, and a
# synthesis of every layer whose addons layer installs the new release in its guarded namespace.
CHECK_THE_COPY = """
import json, sys
from pathlib import Path
import yaml
from profiles import ProfileError, validate_profile
from profiles.schema import profile_schema

doc = yaml.safe_load(Path("profiles/gpu-validation.yaml").read_text())
doc["name"] = "recipe-lab"
doc.setdefault("addons", {})["podinfo"] = {"enabled": True, "replicas": 3}
validate_profile(doc)
problems = {}
for name, change in {
    "replicas": {"replicas": 11},
    "minimum": {"chart_version": "5.2.0"},
    "unknown": {"replicaz": 2},
}.items():
    bad = json.loads(json.dumps(doc))
    bad["addons"]["podinfo"].update(change)
    try:
        validate_profile(bad)
    except ProfileError as error:
        problems[name] = "\\n".join(error.problems)
tenant = json.loads(json.dumps(doc))
tenant.setdefault("workloads", {})["tenants"] = [{"name": "podinfo"}]
try:
    validate_profile(tenant)
except ProfileError as error:
    problems["tenant"] = "\\n".join(error.problems)
Path("copy-profile.yaml").write_text(yaml.safe_dump(doc))
schema = profile_schema()
print(json.dumps({"problems": problems, "schema": json.dumps(schema)}))
"""


def test_an_addon_added_by_the_recipe_validates_synthesizes_and_is_in_the_schema(tmp_path):
    copy = tmp_path / "repo"
    copy_repository(copy)
    files, _ = recipe()
    for path, text in files.items():
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        (copy / path).write_text(text)
    catalog = (copy / "addons" / "catalog.py").read_text()
    catalog = catalog.replace("from addons import (\n", "from addons import (\n    podinfo,\n", 1)
    # At the end of DEFINITIONS (the tuple's last line, whichever add-on that is).
    catalog = re.sub(
        r"(DEFINITIONS[^=]*= \((?:\n    [^\n]*)*)\n\)", r"\1\n    podinfo.DEFINITION,\n)", catalog, count=1
    )
    assert catalog.count("podinfo") == 2
    (copy / "addons" / "catalog.py").write_text(catalog)

    env = {**os.environ, "PYTHONPATH": str(copy)}
    checked = subprocess.run(
        [sys.executable, "-c", CHECK_THE_COPY], cwd=copy, env=env, capture_output=True, text=True, timeout=300
    )
    assert checked.returncode == 0, checked.stderr
    found = json.loads(checked.stdout.strip().splitlines()[-1])
    problems = found["problems"]
    assert "addons.podinfo.replicas" in problems["replicas"]
    assert "addons.podinfo.chart_version" in problems["minimum"] and "readiness endpoint" in problems["minimum"]
    assert "replicaz" in problems["unknown"]
    assert "workloads.tenants.0.name" in problems["tenant"]
    schema = json.loads(found["schema"])
    assert "podinfo" in schema["$defs"]["AddonsConfig"]["properties"]
    assert "PodinfoConfig" in schema["$defs"]

    synth = subprocess.run(
        [sys.executable, "main.py", "synth", "--profile", "copy-profile.yaml", "--outdir", "out"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert synth.returncode == 0, synth.stderr
    addons = json.loads(next((copy / "out" / "stacks").glob("addons/cdk.tf.json")).read_text())
    releases = {body["name"]: body for body in addons["resource"]["helm_release"].values()}
    podinfo = releases["podinfo"]
    assert (podinfo["chart"], podinfo["version"], podinfo["namespace"]) == ("podinfo", "6.9.2", "podinfo")
    assert "replicaCount: 3" in podinfo["values"][0]
    guarded = {
        (body["manifest"]["kind"], body["manifest"]["metadata"]["name"])
        for body in addons["resource"]["kubernetes_manifest"].values()
        if isinstance(body["manifest"], dict) and body["manifest"]["metadata"].get("namespace", "") in ("", "podinfo")
    }
    assert ("Namespace", "podinfo") in guarded and ("NetworkPolicy", "default-deny") in guarded
