"""The project's images meet what runs them: the NCCL test image under the MPI Operator's SSH
contract (components/helm/mpi_contract.py, from the operator's source at its pin), checked with the
real ssh client where it decides; NCCL built for exactly the catalog's GPU architectures."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from components.helm.mpi_contract import MPI_SSH_CONTRACT, SSHD_RUNTIME_DIR, WORKER_COMMAND
from components.images import dockerfile, image_env, image_user
from manifests.launch import ALL_REDUCE_PERF, MPIRUN, OPEN_MPI_PREFIX
from profiles.catalog import CATALOG, COMPUTE_CAPABILITY
from tests.cases import IN_CI

NCCL = dockerfile("nccl-tests")


def heredocs(text: str) -> dict[str, str]:
    """`COPY <<EOF /path` ... `EOF` blocks: target path -> file content."""
    return {path: body for path, body in re.findall(r"^COPY <<EOF (\S+)\n(.*?)^EOF$", text, re.MULTILINE | re.DOTALL)}


def drop_in(kind: str) -> str:
    files = {
        path: body
        for path, body in heredocs(NCCL.read_text()).items()
        if path.startswith(f"/etc/ssh/{kind}_config.d/") and path.endswith(".conf")
    }
    assert len(files) == 1, f"one {kind} drop-in expected, got {sorted(files)}"
    return next(iter(files.values()))


def test_the_heredoc_reader_reads_heredocs():
    text = "FROM x\nCOPY <<EOF /etc/a.conf\nA yes\nB no\nEOF\nRUN true\n"
    assert heredocs(text) == {"/etc/a.conf": "A yes\nB no\n"}


def test_the_launchers_ssh_client_asks_nothing(tmp_path):
    """`ssh -G` prints the configuration ssh would use for a worker's host name."""
    if shutil.which("ssh") is None:
        if IN_CI:
            pytest.fail("CI needs the OpenSSH client to evaluate the image's ssh configuration")
        pytest.skip("SKIPPING: no ssh client on this machine")
    config = tmp_path / "ssh_config"
    config.write_text(drop_in("ssh"))
    shown = subprocess.run(
        ["ssh", "-G", "-F", str(config), "nccl-tests-worker-0.nccl-tests.gpu-validation.svc"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert shown.returncode == 0, shown.stderr
    effective = dict(line.split(" ", 1) for line in shown.stdout.splitlines() if " " in line)
    for setting in (s for s in MPI_SSH_CONTRACT if s.config == "ssh"):
        assert effective.get(setting.keyword) == setting.value, f"{setting.keyword}: {setting.why}"


def test_the_workers_sshd_accepts_the_operators_secret_mount():
    settings = {
        line.split()[0].lower(): line.split()[1].lower()
        for line in drop_in("sshd").splitlines()
        if line.strip() and not line.startswith("#")
    }
    for setting in (s for s in MPI_SSH_CONTRACT if s.config == "sshd"):
        assert settings.get(setting.keyword) == setting.value, f"{setting.keyword}: {setting.why}"


def test_the_image_has_what_the_worker_command_and_the_drop_ins_need():
    text = NCCL.read_text()
    # Ubuntu 22.04 and later include ssh_config.d/ and sshd_config.d/ at the top of their configs.
    assert re.search(r"^ARG CUDA_IMAGE=\S+-ubuntu(2[2-9]|[3-9]\d)\.04$", text, re.MULTILINE)
    assert re.search(r"apt-get install[^\n]*(\n[^\n]*)*openssh-server openssh-client", text)
    assert f"mkdir -p {SSHD_RUNTIME_DIR}" in text
    from manifests.render import render
    from profiles import load_profile

    (job,) = [
        o for objects in render(load_profile("gpu-validation")).values() for o in objects if o["kind"] == "MPIJob"
    ]
    (worker,) = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert tuple(worker["command"]) == WORKER_COMMAND


def _gencode(text: str) -> set[tuple[str, str]]:
    (value,) = re.findall(r'^ARG NVCC_GENCODE="([^"]+)"$', text, re.MULTILINE)
    return set(re.findall(r"-gencode=arch=compute_(\d+),code=(sm_\d+|compute_\d+)", value))


def test_nccl_is_built_for_every_catalog_gpu_and_nothing_more():
    text = NCCL.read_text()
    cubins = {int(code[3:]) for _, code in _gencode(text) if code.startswith("sm_")}
    wanted = {COMPUTE_CAPABILITY[entry.gpu_model] for entry in CATALOG.values()}
    for major, minor in wanted:
        # A cubin for sm_XY runs on any GPU of major X with minor >= Y.
        assert any(c // 10 == major and c % 10 <= minor for c in cubins), f"no cubin for sm_{major}{minor}"
    assert all(any(c // 10 == major and c % 10 <= minor for major, minor in wanted) for c in cubins), cubins
    newest = max(major * 10 for major, _ in wanted)
    assert (str(newest), f"compute_{newest}") in _gencode(text)  # PTX, for GPUs newer than the catalog
    assert "python3" in text
    assert text.count('NVCC_GENCODE="${NVCC_GENCODE}"') == 2  # NCCL and nccl-tests


PYTORCH_EFA = dockerfile("pytorch-efa")


def _args(text: str) -> dict[str, str]:
    return dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.MULTILINE))


def test_the_pytorch_image_brings_the_nccl_tests_images_efa_stack():
    """The EFA installer and aws-ofi-nccl are pinned once in effect: the PyTorch image takes the
    versions the NCCL test image is validated with."""
    torch, nccl = _args(PYTORCH_EFA.read_text()), _args(NCCL.read_text())
    for pin in ("EFA_INSTALLER_VERSION", "AWS_OFI_NCCL_VERSION"):
        assert torch[pin] == nccl[pin], pin


def test_the_pytorch_image_builds_on_the_official_image_of_its_pinned_pytorch():
    from profiles.cuda import cuda_of

    args = _args(PYTORCH_EFA.read_text())
    base = args["CUDA_IMAGE"]
    assert re.fullmatch(rf"pytorch/pytorch:{re.escape(args['TORCH_VERSION'])}-cuda\d+\.\d+-cudnn\d+-devel", base)
    assert cuda_of(base) == (12, 8)  # the validation images' CUDA (profiles/cuda.py checks the driver)


def test_the_pytorch_image_loads_aws_ofi_nccl_for_efa():
    text = PYTORCH_EFA.read_text()
    # The plugin under the name NCCL opens by default, on the library path, for the efa provider,
    # built with its AWS platform support whatever host builds it.
    assert "test -e /opt/aws-ofi-nccl/lib/libnccl-net.so" in text
    (path,) = re.findall(r"LD_LIBRARY_PATH=(\S+)", text)
    assert path.split(":")[:2] == ["/opt/aws-ofi-nccl/lib", "/opt/amazon/efa/lib"]
    assert re.search(r"^\s+FI_PROVIDER=efa$", text, re.MULTILINE)
    assert "--enable-platform-aws" in text and "--with-libfabric=/opt/amazon/efa" in text


def test_the_pytorch_images_nccl_is_the_one_verifys_judge_was_checked_against():
    """The build fails unless PyTorch's NCCL is TORCH_NCCL_VERSION; the torchrun fixtures are that
    NCCL's log lines."""
    from tests.test_nccl_transport import fixture

    args = _args(PYTORCH_EFA.read_text())
    assert "torch.cuda.nccl.version()" in PYTORCH_EFA.read_text()
    logged = fixture("torch-efa-healthy-p5.log")
    assert f"NCCL version {args['TORCH_NCCL_VERSION']}+cuda" in logged
    assert f"Initializing aws-ofi-nccl {args['AWS_OFI_NCCL_VERSION']}" in logged


def test_the_pytorch_images_tag_names_its_pins():
    from components.images import project_image_tag

    args = _args(PYTORCH_EFA.read_text())
    tag = project_image_tag("pytorch-efa")
    assert tag.startswith(
        f"torch{args['TORCH_VERSION']}-nccl{args['TORCH_NCCL_VERSION']}-efa{args['EFA_INSTALLER_VERSION']}"
        f"-ofi{args['AWS_OFI_NCCL_VERSION']}-"
    )
    assert re.fullmatch(r"[\w][\w.-]{0,127}", tag)  # an ECR tag


def test_the_launch_line_runs_the_images_own_open_mpi_and_nccl_tests_as_its_user():
    """manifests/launch.py names the image's mpirun by its absolute path, the all_reduce_perf its
    build makes, and gives root's flag because the image runs as root."""
    text = NCCL.read_text()
    assert f"{OPEN_MPI_PREFIX}/bin" in image_env("nccl-tests")["PATH"].split(":") and MPIRUN.startswith(OPEN_MPI_PREFIX)
    assert f"MPI_HOME={OPEN_MPI_PREFIX}" in text
    assert re.search(r"nccl-tests\.git /opt/nccl-tests\b", text) and ALL_REDUCE_PERF.startswith(
        "/opt/nccl-tests/build/"
    )
    assert image_user("nccl-tests") == "root"


def test_the_image_env_reader_joins_continuations_and_keeps_references():
    env = image_env("nccl-tests")
    assert env["FI_PROVIDER"] == "efa" and env["PATH"].endswith(":${PATH}")
    assert env["LD_LIBRARY_PATH"].split(":")[0] == "/opt/nccl/lib"


MLFLOW = dockerfile("mlflow")
MLFLOW_FOLDER = MLFLOW.parent


def _locked(text: str) -> dict[str, tuple[str, list[str]]]:
    """A pip lock file's `name==version \\ --hash=...` entries: name -> (version, hashes)."""
    found: dict[str, tuple[str, list[str]]] = {}
    for entry in re.split(r"\n(?=\S)", re.sub(r"^#.*\n", "", text, flags=re.MULTILINE).strip()):
        requirement, *hashes = (part.strip() for part in entry.split("\\"))
        name, version = requirement.split("==")
        found[name.lower()] = (version, [h.removeprefix("--hash=") for h in hashes])
    return found


def _wanted(text: str) -> dict[str, str]:
    """requirements.in's `name[extras]==version` lines: name -> version."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return {re.sub(r"\[.*\]", "", line.split("==")[0]).lower(): line.split("==")[1] for line in lines}


def test_the_mlflow_image_installs_only_hash_locked_wheels_of_its_pins():
    text = MLFLOW.read_text()
    assert "pip install --no-cache-dir --root-user-action=ignore --require-hashes --only-binary=:all: --no-deps" in text
    assert "&& pip check" in text
    locked = _locked((MLFLOW_FOLDER / "requirements.txt").read_text())
    wanted = _wanted((MLFLOW_FOLDER / "requirements.in").read_text())
    assert set(wanted) == {"mlflow", "psycopg2-binary", "boto3"}
    for name, version in wanted.items():
        assert locked[name][0] == version, name  # the lock is compiled from requirements.in
    assert "mlflow[auth]==" in (MLFLOW_FOLDER / "requirements.in").read_text()  # the basic-auth app's extra
    assert "flask-wtf" in locked
    for name, (version, hashes) in locked.items():
        assert re.fullmatch(r"[\w.+!-]+", version) and hashes, name
        assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), name


def test_the_mlflow_image_is_the_charts_app_version_on_the_official_python_image():
    from addons.mlflow import DEFINITION

    args = _args(MLFLOW.read_text())
    assert args["MLFLOW_VERSION"] == DEFINITION.pin.app_version  # the MLflow the chart was released for
    assert _locked((MLFLOW_FOLDER / "requirements.txt").read_text())["mlflow"][0] == args["MLFLOW_VERSION"]
    # Docker's official image (ECR Public mirrors Docker Hub's library images), at a patch release.
    base = re.fullmatch(r"public\.ecr\.aws/docker/library/python:(\d+\.\d+)\.\d+-slim-\w+", args["PYTHON_IMAGE"])
    assert base, args["PYTHON_IMAGE"]
    # The lock was compiled for the base image's Python.
    assert f"--python-version {base[1]} " in (MLFLOW_FOLDER / "requirements.txt").read_text()
    assert "mlflow.__version__ == '${MLFLOW_VERSION}'" in MLFLOW.read_text()


def test_the_mlflow_image_runs_as_the_user_the_pods_name():
    from addons.mlflow import IMAGE_USER

    assert image_user("mlflow") == f"{IMAGE_USER}:{IMAGE_USER}"
    assert _args(MLFLOW.read_text())["MLFLOW_UID"] == str(IMAGE_USER)
    assert image_env("mlflow")["HOME"] == "/tmp"  # the pods' one writable folder


def test_the_mlflow_scripts_import_only_the_standard_library_and_the_lock():
    import ast
    import sys

    locked = _locked((MLFLOW_FOLDER / "requirements.txt").read_text())
    modules = {"boto3": "boto3", "psycopg2": "psycopg2-binary", "db_login": None}
    for script in ("db_login.py", "db_setup.py"):
        tree = ast.parse((MLFLOW_FOLDER / script).read_text())
        names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        names |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        for name in {n.split(".")[0] for n in names} - {"__future__"}:
            if name in sys.stdlib_module_names:
                continue
            assert name in modules, f"{script} imports {name}"
            assert modules[name] is None or modules[name] in locked, name


def test_the_mlflow_images_tag_covers_its_lock(tmp_path, monkeypatch):
    """The tag names the MLflow version and hashes the Dockerfile with the lock it copies: a new
    lock is a new tag (the repositories are immutable), while files the image does not copy (the
    scripts the pods mount from a ConfigMap) leave it alone."""
    import shutil

    from components import images

    tag = images.project_image_tag("mlflow")
    assert re.fullmatch(rf"mlflow{re.escape(_args(MLFLOW.read_text())['MLFLOW_VERSION'])}-[0-9a-f]{{12}}", tag)
    assert images.copied_files("mlflow") == [MLFLOW_FOLDER / "requirements.txt"]
    shutil.copytree(MLFLOW_FOLDER, tmp_path / "mlflow")
    monkeypatch.setattr(images, "IMAGES_DIR", tmp_path)
    assert images.project_image_tag("mlflow") == tag
    (tmp_path / "mlflow" / "db_setup.py").write_text("# changed\n")
    assert images.project_image_tag("mlflow") == tag
    with (tmp_path / "mlflow" / "requirements.txt").open("a") as lock:
        lock.write("six==1.17.0 \\\n    --hash=sha256:" + "0" * 64 + "\n")
    assert images.project_image_tag("mlflow") != tag


def test_the_copy_reader_takes_files_and_folders_but_not_heredocs_or_stages(tmp_path, monkeypatch):
    from components import images

    (tmp_path / "x" / "conf").mkdir(parents=True)
    (tmp_path / "x" / "a.txt").write_text("a")
    (tmp_path / "x" / "conf" / "b.txt").write_text("b")
    (tmp_path / "x" / "Dockerfile").write_text(
        "FROM x\nCOPY --chown=1:1 a.txt conf /opt/\nCOPY --from=build /out /out\nCOPY <<EOF /etc/c\nc\nEOF\n"
    )
    monkeypatch.setattr(images, "IMAGES_DIR", tmp_path)
    assert images.copied_files("x") == [tmp_path / "x" / "a.txt", tmp_path / "x" / "conf" / "b.txt"]
    (tmp_path / "x" / "Dockerfile").write_text("FROM x\nCOPY missing.txt /opt/\n")
    with pytest.raises(FileNotFoundError, match=r"missing\.txt"):
        images.copied_files("x")
