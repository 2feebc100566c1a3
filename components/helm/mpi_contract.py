"""What the MPI Operator (v2beta1 controller, the pinned release) expects of a job's image at run
time. The project's own images (images/*/Dockerfile) are tested against this list.

From kubeflow/mpi-operator at v0.8.0:
- pkg/controller/mpi_job_controller.go: the job's SSH keys come from a generated Secret mounted at
  /root/.ssh (rootSSHPath, sshVolumeItems: id_rsa, id_rsa.pub, authorized_keys), read-only and
  owned by root with the Secret's modes; workers run `/usr/sbin/sshd -De` (newWorker); the launcher's
  mpirun gets only `-o ConnectionAttempts=10` as its rsh arguments (OMPI_MCA_plm_rsh_args).
- build/base/Dockerfile (the operator's own base image) therefore sets StrictHostKeyChecking no
  (no prompt for a worker's unknown host key), UserKnownHostsFile /dev/null (the mounted .ssh
  is read-only) and sshd's StrictModes no (the Secret's files fail its ownership checks).
Without them the launcher stops at host-key verification and mpirun fails.
"""

from __future__ import annotations

from dataclasses import dataclass

MPI_OPERATOR_SOURCE = "kubeflow/mpi-operator v0.8.0"


@dataclass(frozen=True)
class SshSetting:
    config: str
    """Which configuration: ssh (the launcher's client) or sshd (the workers' server)."""
    keyword: str
    value: str
    """As `ssh -G` / `sshd -T` print it (lower case)."""
    why: str


MPI_SSH_CONTRACT = (
    SshSetting(
        "ssh",
        "stricthostkeychecking",
        "false",
        "mpirun passes only ConnectionAttempts: an unknown worker host key must not stop it",
    ),
    SshSetting("ssh", "userknownhostsfile", "/dev/null", "/root/.ssh is a read-only Secret mount"),
    SshSetting("sshd", "strictmodes", "no", "the Secret's files fail sshd's ownership and mode checks"),
)
# Workers run this; it needs its privilege-separation directory.
WORKER_COMMAND = ("/usr/sbin/sshd", "-De")
SSHD_RUNTIME_DIR = "/run/sshd"
