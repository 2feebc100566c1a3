"""MLflow's acceptance check (`verify`): a pod in MLflow's namespace logs a run with a metric and an
artifact through the tracking Service, reads both back and prints them; the check judges that line."""

from __future__ import annotations

import json
from typing import Any

from addons.mlflow import IMAGE as MLFLOW_IMAGE
from addons.mlflow import IMAGE_USER as MLFLOW_IMAGE_USER
from addons.mlflow import MlflowConfig
from addons.mlflow import access as mlflow_access
from components.acceptance import AcceptanceCheck, CheckResult, CheckRun, locked_down_container
from components.k8s.security import non_root_pod
from components.labels import SYSTEM_NODES

MLFLOW_CHECK = "mlflow-tracking-check"
MLFLOW_CHECK_MARKER = "MLFLOW_CHECK "
MLFLOW_CHECK_METRIC = ("validation_loss", 0.125)
MLFLOW_CHECK_ARTIFACT = ("validation/check.txt", "gpu-platform tracking check")
# Logs a run through the tracking Service (artifacts go through the server to S3), then reads the
# metric and the artifact back and prints them as one JSON line for `verify` to judge.
MLFLOW_CHECK_SCRIPT = f"""
import json, mlflow
from mlflow import MlflowClient
mlflow.set_experiment("platform-validation")
with mlflow.start_run(run_name="tracking-check") as run:
    mlflow.log_metric({MLFLOW_CHECK_METRIC[0]!r}, {MLFLOW_CHECK_METRIC[1]!r})
    mlflow.log_text({MLFLOW_CHECK_ARTIFACT[1]!r}, {MLFLOW_CHECK_ARTIFACT[0]!r})
run_id = run.info.run_id
metrics = MlflowClient().get_run(run_id).data.metrics
artifact = mlflow.artifacts.load_text(f"runs:/{{run_id}}/{MLFLOW_CHECK_ARTIFACT[0]}")
print({MLFLOW_CHECK_MARKER!r} + json.dumps({{"run_id": run_id, "metrics": metrics, "artifact": artifact}}), flush=True)
"""


def mlflow_check_pod(settings: MlflowConfig) -> dict[str, Any]:
    """The tracking check runs in MLflow's namespace, where the admin's Secret is (it is never
    copied elsewhere); tenants reach the same Service through their own NetworkPolicy allow."""
    secret = mlflow_access.admin_secret(settings)
    login = [
        {"name": f"MLFLOW_TRACKING_{key.upper()}", "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}
        for key in ("username", "password")
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": MLFLOW_CHECK,
            "namespace": mlflow_access.NAMESPACE,
            "labels": {"app.kubernetes.io/part-of": "gpu-validation"},
        },
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "nodeSelector": dict(SYSTEM_NODES),
            "securityContext": non_root_pod(MLFLOW_IMAGE_USER),
            "containers": [
                {
                    "name": "check",
                    "image": MLFLOW_IMAGE,
                    "command": ["python", "-c", MLFLOW_CHECK_SCRIPT],
                    "env": [*mlflow_access.tracking_env(), *login, {"name": "HOME", "value": "/tmp"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
                    "securityContext": locked_down_container(),
                    "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                }
            ],
            "volumes": [{"name": "tmp", "emptyDir": {}}],
        },
    }


def check_mlflow(log: str) -> CheckResult:
    """The tracking check's JSON line: the run exists, and the metric and the artifact read back
    are the ones logged."""
    name = MLFLOW_CHECK
    lines = [line[len(MLFLOW_CHECK_MARKER) :] for line in log.splitlines() if line.startswith(MLFLOW_CHECK_MARKER)]
    if not lines:
        return CheckResult(name, False, "the check printed no result line (see the pod's log)")
    try:
        result = json.loads(lines[-1])
    except json.JSONDecodeError:
        return CheckResult(name, False, f"the check's result line is not JSON: {lines[-1][:200]!r}")
    metric, value = MLFLOW_CHECK_METRIC
    path, text = MLFLOW_CHECK_ARTIFACT
    if not result.get("run_id"):
        return CheckResult(name, False, "no run id: the run was not created")
    if result.get("metrics", {}).get(metric) != value:
        return CheckResult(
            name, False, f"metric {metric} read back as {result.get('metrics', {}).get(metric)!r}, logged {value}"
        )
    if result.get("artifact") != text:
        return CheckResult(name, False, f"artifact {path} read back as {result.get('artifact')!r}, logged {text!r}")
    return CheckResult(
        name,
        True,
        f"run {result['run_id']} logged and read back a metric and an artifact "
        "(backend store and S3 artifacts through the server)",
    )


def mlflow_check(settings: MlflowConfig) -> AcceptanceCheck:
    def run(check: CheckRun) -> CheckResult:
        done, log = check.pod_log(MLFLOW_CHECK, mlflow_access.NAMESPACE)
        if not done:
            return CheckResult(MLFLOW_CHECK, False, f"pod did not succeed: {log[-500:]}".strip())
        return check_mlflow(log)

    return AcceptanceCheck(name=MLFLOW_CHECK, run=run, objects=(mlflow_check_pod(settings),))
