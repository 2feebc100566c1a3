"""The alert for a training job that stopped making progress, read from the run-time signal the
runtimes already have: the node container's liveness probe on PROGRESS_FILE (runtimes.py).

The contract. Training code writes (touches) the file named by PROGRESS_FILE after every step; the
platform's sample does so on rank 0. Once the file is older than PROGRESS_TIMEOUT_SECONDS, the probe
fails every minute; after three failures in a row the kubelet kills the container and JobSet
restarts the gang from its last checkpoint (counted against maxRestarts). The alert fires on the
first failure, so a person hears of the stall (about 30 minutes without a step) while the restart
is under way, and again if it comes back.

The metric. The kubelet counts every probe it runs, by result, as `prober_probe_total` with the
labels probe_type (Liveness, Readiness, Startup), result (successful, failed, unknown), container,
pod, namespace and pod_uid (kubernetes pkg/kubelet/prober/prober_manager.go, ProberResults; an
ALPHA metric), served on the kubelet's /metrics/probes, which kube-prometheus-stack 88.5.3 scrapes
by default (values.yaml kubelet.serviceMonitor.probes: true). No exporter of its own is needed: the
file never leaves the pod. The series is the pod's only while the pod exists; the kubelet removes
it with the pod, so `increase` over a few minutes sees the failures between the first one and the
kill. A pod that never writes the file (the other nodes, code that ignores the contract) passes the
probe and never fires.
"""

from __future__ import annotations

from typing import Any

from addons.trainer.runtimes import PROGRESS_FILE_ENV, PROGRESS_TIMEOUT_SECONDS, TRAINER_CONTAINER, progress_probe

TRAINING_PROGRESS_STALLED = "TrainingProgressStalled"
# Long enough to hold the failures up to the kill (failureThreshold probes, periodSeconds apart)
# with a scrape on either side.
WINDOW_MINUTES = 5


def progress_rules() -> dict[str, Any]:
    """The Trainer add-on's rule group."""
    probe = progress_probe()
    kill_after = probe["failureThreshold"] * probe["periodSeconds"]
    assert kill_after < WINDOW_MINUTES * 60, "the window must hold every failure before the kill"
    failed = f'prober_probe_total{{probe_type="Liveness", result="failed", container="{TRAINER_CONTAINER}"}}'
    return {
        "name": "training-progress",
        "rules": [
            {
                "alert": TRAINING_PROGRESS_STALLED,
                "expr": f"sum by (namespace, pod) (increase({failed}[{WINDOW_MINUTES}m])) > 0",
                "for": "0m",
                "labels": {"severity": "critical"},
                "annotations": {
                    "summary": "Training pod {{ $labels.namespace }}/{{ $labels.pod }} has made no progress for "
                    f"{PROGRESS_TIMEOUT_SECONDS // 60} minutes",
                    "description": f"Its {PROGRESS_FILE_ENV} was not written for {PROGRESS_TIMEOUT_SECONDS} s, so its "
                    f"liveness probe fails; after {probe['failureThreshold']} failures the container is killed and "
                    "the gang restarts from its last checkpoint (counted). Its log shows where it stopped: a data "
                    "loader, a file system, a deadlock outside NCCL.",
                },
            }
        ],
    }
