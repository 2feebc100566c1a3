"""MLflow's acceptance check (`verify`): a pod in MLflow's namespace logs a run with a metric and an
artifact through the tracking Service, reads both back and prints them; the check judges that line."""

from __future__ import annotations

import json
from typing import Any

from addons.mlflow import IMAGE_USER as MLFLOW_IMAGE_USER
from addons.mlflow import MlflowConfig
from addons.mlflow import access as mlflow_access
from components.acceptance import AcceptanceCheck, CheckResult, CheckRun, locked_down_container
from components.k8s.security import non_root_pod
from components.labels import SYSTEM_NODES
from profiles.versions import PYTHON_IMAGE

MLFLOW_CHECK = "mlflow-tracking-check"
MLFLOW_CHECK_MARKER = "MLFLOW_CHECK "
MLFLOW_CHECK_METRIC = ("validation_loss", 0.125)
MLFLOW_CHECK_ARTIFACT = ("validation/check.txt", "gpu-platform tracking check")
# Logs a run through the tracking Service with MLflow's REST API (the artifact through the server's
# proxy to S3), then reads the metric and the artifact back and prints them as one JSON line for
# `verify` to judge. Standard library only: it runs on the platform's pinned Python image, so the
# check needs no MLflow image of its own (the server's is the build layer's, in ECR). The routes are
# MLflow 3.15.1's (mlflow/server/handlers.py: experiments/get-by-name and create, runs/create,
# log-metric, update and get; mlflow-artifacts/artifacts/<path> PUT and GET), checked against a
# server of that version with basic auth and --serve-artifacts. Arguments: metric name and value,
# artifact path and text.
MLFLOW_CHECK_SCRIPT = """
import base64, json, os, sys, time, urllib.error, urllib.parse, urllib.request
metric, value, path, text = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
base = os.environ["MLFLOW_TRACKING_URI"].rstrip("/")
login = os.environ["MLFLOW_TRACKING_USERNAME"] + ":" + os.environ["MLFLOW_TRACKING_PASSWORD"]
auth = "Basic " + base64.b64encode(login.encode()).decode()
def call(method, route, body=None, query=None, raw=None):
    url = base + route + ("?" + urllib.parse.urlencode(query) if query else "")
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(url, data=data, method=method, headers={"Authorization": auth})
    if body is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = response.read()
    return answer if raw is not None or route.startswith("/api/2.0/mlflow-artifacts/") else json.loads(answer or b"{}")
now = lambda: int(time.time() * 1000)
api, name = "/api/2.0/mlflow/", "platform-validation"
try:
    experiment = call("GET", api + "experiments/get-by-name", query={"experiment_name": name})["experiment"]
    experiment_id = experiment["experiment_id"]
except urllib.error.HTTPError as error:
    if error.code != 404:
        raise
    experiment_id = call("POST", api + "experiments/create", {"name": name})["experiment_id"]
started = {"experiment_id": experiment_id, "run_name": "tracking-check", "start_time": now()}
run = call("POST", api + "runs/create", started)
run_id, artifacts = run["run"]["info"]["run_id"], run["run"]["info"]["artifact_uri"]
call("POST", api + "runs/log-metric", {"run_id": run_id, "key": metric, "value": value, "timestamp": now(), "step": 0})
stored = "/api/2.0/mlflow-artifacts/artifacts/" + urllib.parse.urlsplit(artifacts).path.strip("/") + "/" + path
call("PUT", stored, raw=text.encode())
call("POST", api + "runs/update", {"run_id": run_id, "status": "FINISHED", "end_time": now()})
logged = call("GET", api + "runs/get", query={"run_id": run_id})["run"]["data"].get("metrics", [])
metrics = {m["key"]: m["value"] for m in logged}
artifact = call("GET", stored).decode()
print("MLFLOW_CHECK " + json.dumps({"run_id": run_id, "metrics": metrics, "artifact": artifact}), flush=True)
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
                    "image": PYTHON_IMAGE,
                    "command": [
                        "python",
                        "-c",
                        MLFLOW_CHECK_SCRIPT,
                        MLFLOW_CHECK_METRIC[0],
                        str(MLFLOW_CHECK_METRIC[1]),
                        *MLFLOW_CHECK_ARTIFACT,
                    ],
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
