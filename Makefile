# The two commands a newcomer types: `make synth` and `make test`.
# Both create the project's environment on first use and reuse it afterwards.

PROFILE ?= gpu-validation
PYTHON ?= python3
UV_VERSION := 0.13.9

TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
PY := $(VENV)/bin/python
# Two stamps: synthesis and operations need only the app's dependencies; test tooling (the dev
# group: pytest, moto, mypy, ...) arrives with the first `make test` or `make lint`.
STAMP := $(VENV)/.synced
DEV_STAMP := $(VENV)/.synced-dev

export UV_PROJECT_ENVIRONMENT := $(VENV)
# Bytecode is written by the imports themselves, for the few hundred modules synthesis loads,
# instead of compiling all ~8,500 files at install time; machines that set
# PYTHONDONTWRITEBYTECODE would otherwise recompile the provider imports on every run.
unexport PYTHONDONTWRITEBYTECODE
# jsii unpacks the provider bindings (~570 MB) once; keep them with the project.
export JSII_RUNTIME_PACKAGE_CACHE_ROOT ?= $(CURDIR)/.cache/jsii

.PHONY: synth test check lint env tenant-guide manifests verify plan deploy destroy pause resume validate outputs hcl clean provider-mirror help profiles diagram dashboard-docs reference-docs new-profile quotas cost

help:  ## this list
	@grep -E '^[a-z-]+( [a-z-]+)*:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort | expand -t 24
	@echo "PROFILE=<name or path> (default $(PROFILE)), LAYER=all|aws|<layer>, AUTO_APPROVE=1"
	@echo "deploy: SKIP_QUOTA_CHECK=1; destroy: DELETE_DATA=1, in CI with CONFIRM_DELETE_DATA=<profile name>"
LAYER ?= all
# Terraform (and the cdktf CLI) never call HashiCorp's update-check service.
export CHECKPOINT_DISABLE := 1

env: $(STAMP)

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet uv==$(UV_VERSION)

$(STAMP): $(UV) pyproject.toml uv.lock
	$(UV) sync --frozen --no-dev --inexact
	touch $@

$(DEV_STAMP): $(STAMP)
	$(UV) sync --frozen
	touch $@

# checkov pins dependencies that conflict with the app's (packaging), so it lives in its own
# environment, installed from its own hash-locked requirements.
CHECKOV := $(TOOLS)/checkov/bin/checkov
$(CHECKOV): $(UV) tools/checkov.lock
	$(UV) venv --quiet --allow-existing $(TOOLS)/checkov --python $(PYTHON)
	VIRTUAL_ENV=$(TOOLS)/checkov $(UV) pip sync --quiet --require-hashes tools/checkov.lock
	touch $@

# PyTorch for the executed torchrun tests (tests/test_launch_torchrun.py): torch's CPU build and what
# it needs, in an environment of their own from hash-locked requirements (tools/torch.lock, for
# CPython 3.11 on x86_64 Linux). PyPI carries only torch's CUDA build (GBs of CUDA libraries, no use
# on a CPU); the CPU build is on PyTorch's own index, which pip is asked only when its own sources
# (PyPI and any find-links of its configuration) do not have the locked wheel.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH := $(TOOLS)/torch/.installed
$(TORCH): tools/torch.lock
	@$(PYTHON) -c 'import platform, sys; sys.exit(None if (sys.version_info[:2], platform.machine()) == ((3, 11), "x86_64") else "tools/torch.lock is locked for CPython 3.11 on x86_64, not %s on %s: set PYTHON" % (platform.python_version(), platform.machine()))'
	rm -rf $(TOOLS)/torch
	$(PYTHON) -m venv $(TOOLS)/torch
	$(TOOLS)/torch/bin/pip install --quiet --no-deps --require-hashes -r tools/torch.lock 2>/dev/null \
		|| $(TOOLS)/torch/bin/pip install --quiet --no-deps --require-hashes --extra-index-url $(TORCH_INDEX) \
			-r tools/torch.lock
	$(TOOLS)/torch/bin/python -c 'import torch; print("PyTorch", torch.__version__, "in $(TOOLS)/torch")'
	touch $@

# promtool unit-tests the alert rules. Debian's prometheus package ships it: the package is only
# downloaded and unpacked here (no service is installed), and only promtool is kept.
PROMETHEUS_DEB := 2.42.0+ds-5+deb12u1
PROMTOOL := $(TOOLS)/bin/promtool
$(PROMTOOL):
	mkdir -p $(TOOLS)/prometheus-deb $(TOOLS)/bin
	cd $(TOOLS)/prometheus-deb && (apt-get download prometheus=$(PROMETHEUS_DEB) 2>/dev/null \
		|| (echo "prometheus $(PROMETHEUS_DEB) is gone from the mirror: taking Debian's current one" >&2; \
		    apt-get download prometheus))
	dpkg-deb -x $$(ls $(TOOLS)/prometheus-deb/prometheus_*.deb | head -1) $(TOOLS)/prometheus-deb/x
	cp $(TOOLS)/prometheus-deb/x/usr/bin/promtool $@
	rm -rf $(TOOLS)/prometheus-deb
	$@ --version | head -1

# amtool checks the Alertmanager configuration and its routing: Debian's prometheus-alertmanager
# package ships it, unpacked the same way (no service installed), only amtool kept.
ALERTMANAGER_DEB := 0.25.0-1+b4
AMTOOL := $(TOOLS)/bin/amtool
$(AMTOOL):
	mkdir -p $(TOOLS)/alertmanager-deb $(TOOLS)/bin
	cd $(TOOLS)/alertmanager-deb && (apt-get download prometheus-alertmanager=$(ALERTMANAGER_DEB) 2>/dev/null \
		|| (echo "prometheus-alertmanager $(ALERTMANAGER_DEB) is gone from the mirror: taking Debian's current one" >&2; \
		    apt-get download prometheus-alertmanager))
	dpkg-deb -x $$(ls $(TOOLS)/alertmanager-deb/prometheus-alertmanager_*.deb | head -1) $(TOOLS)/alertmanager-deb/x
	cp $(TOOLS)/alertmanager-deb/x/usr/bin/amtool $@
	rm -rf $(TOOLS)/alertmanager-deb
	$@ --version 2>&1 | head -1

quotas: $(STAMP)  ## the EC2 vCPU quotas PROFILE needs, and the aws commands to check and raise them (CHECK=1: read them)
	$(PY) main.py quotas --profile $(PROFILE) $(if $(filter 1 true,$(CHECK)),--check)

cost: $(STAMP)  ## what PROFILE costs per hour at AWS's current on-demand prices (needs AWS credentials)
	$(PY) main.py cost --profile $(PROFILE)

profiles: $(STAMP)  ## list the shipped profiles (GPU type and count, nodes, EFA interfaces)
	$(PY) main.py profiles

new-profile: $(STAMP)  ## copy shipped profile PROFILE to TO=path/mine.yaml, ready to edit
	$(PY) main.py new-profile "$(TO)" --from $(PROFILE)

synth: $(STAMP)  ## synthesize every layer of PROFILE into cdktf.out/<name>/
	$(PY) main.py synth --profile $(PROFILE)

diagram: $(STAMP)  ## redraw the README's layers diagram from the default profile's synthesized stacks
	$(PY) main.py diagram --profile gpu-validation --readme

dashboard-docs: $(STAMP)  ## rewrite docs/dashboards/ (a page per dashboard) from the dashboards' code
	$(PY) scripts/dashboard_docs.py

reference-docs: $(STAMP)  ## rewrite the generated reference pages (docs/outputs.md) from the code
	$(PY) scripts/reference_docs.py

tenant-guide: $(STAMP)  ## print a tenant's day-one page for PROFILE (TENANT=<name>, default: the first)
	$(PY) main.py tenant-guide --profile $(PROFILE) $(if $(TENANT),--tenant $(TENANT))

manifests: $(STAMP)  ## write the validation workloads as YAML
	$(PY) main.py manifests --profile $(PROFILE)

verify: $(STAMP)  ## run the validation workloads on the profile's cluster
	$(PY) main.py verify --profile $(PROFILE)

hcl: $(STAMP)  ## write the stacks as HCL (leaving cdktf)
	$(PY) main.py hcl --profile $(PROFILE)

# deploy and destroy show each layer's plan and ask; AUTO_APPROVE=1 on the make command line approves
# (needed without a terminal). An AUTO_APPROVE exported in the shell approves nothing, and neither
# does one in an exported MAKEFLAGS or GNUMAKEFLAGS: make gives those the origin "command line"
# too, so the approval must also be a word of this make's own command line (its parent's argv,
# from /proc or ps: the shell of $(shell) is make's child). Without either, nothing is approved.
# One word per argument: blanks inside an argument become \037 first, so that a word inside
# another argument ("PROFILE=x AUTO_APPROVE=1") is never taken for an argument of its own.
MAKE_COMMAND_LINE := $(shell { tr ' \t\n\0' '\037\037\037 ' < /proc/$$PPID/cmdline || ps -o args= -p $$PPID; } 2>/dev/null)
typed = $(and $(filter command line,$(origin $(1))),$(filter $(1)=%,$(MAKE_COMMAND_LINE)))
APPROVE = $(if $(and $(call typed,AUTO_APPROVE),$(filter 1 true,$(AUTO_APPROVE))),--yes)
# SKIP_QUOTA_CHECK=1: deploy even when the account's quotas or reservations cannot be read (warned).
# DELETE_DATA=1 asks you to type the profile name, which AUTO_APPROVE does not answer; in CI,
# CONFIRM_DELETE_DATA=<profile name> on the make command line confirms it (warned).
CONFIRM_DATA = $(if $(and $(call typed,CONFIRM_DELETE_DATA),$(CONFIRM_DELETE_DATA)),--confirm-delete-data='$(CONFIRM_DELETE_DATA)')
plan deploy destroy: $(STAMP)  ## plan / deploy / destroy LAYER of PROFILE, plans shown (DELETE_DATA=1: with the data)
	$(PY) main.py $@ --profile $(PROFILE) --layer $(LAYER) $(APPROVE) \
		$(if $(and $(filter deploy,$@),$(filter 1 true,$(SKIP_QUOTA_CHECK))),--skip-quota-check) \
		$(if $(and $(filter destroy,$@),$(DELETE_DATA)),--delete-data) $(if $(filter destroy,$@),$(CONFIRM_DATA))

pause resume: $(STAMP)  ## stop every node and keep data and cluster / scale the nodes back
	$(PY) main.py $@ --profile $(PROFILE) $(APPROVE)

validate: $(STAMP)  ## terraform validate LAYER of PROFILE with the real providers (needs the registry)
	$(PY) main.py validate --profile $(PROFILE) --layer $(LAYER)

outputs: $(STAMP)  ## print the deployed layers' outputs
	$(PY) main.py outputs --profile $(PROFILE)

# A filesystem mirror of hashicorp/aws for the offline tests, made where the registry is reachable
# (the GitHub workflow does this); point TF_PROVIDER_MIRROR at it.
MIRROR ?= $(CURDIR)/.tools/terraform-mirror
provider-mirror:  ## make an offline mirror of hashicorp/aws (needs the registry)
	mkdir -p .tools/mirror-source
	printf 'terraform {\n  required_providers {\n    aws = { source = "hashicorp/aws", version = "5.100.0" }\n  }\n}\n' \
		> .tools/mirror-source/main.tf
	terraform -chdir=.tools/mirror-source providers mirror -platform=linux_amd64 $(MIRROR)

# PostgreSQL's server runs the MLflow database setup in tests (tests/test_mlflow_db_setup.py).
# Machines of this kind carry Debian's postgresql-15; where one does not, the package is only
# downloaded and unpacked here (no service is installed, no cluster is made).
POSTGRES_DEB := postgresql-15
POSTGRES := $(TOOLS)/postgresql/.ready
$(POSTGRES):
	mkdir -p $(TOOLS)/postgresql
	if ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then \
		echo "PostgreSQL server: $$(ls -d /usr/lib/postgresql/*/bin | tail -1)"; \
	else \
		cd $(TOOLS)/postgresql && apt-get download $(POSTGRES_DEB) && \
		dpkg-deb -x $$(ls $(POSTGRES_DEB)_*.deb | head -1) . && rm -f $(POSTGRES_DEB)_*.deb; \
	fi
	touch $@

# The lint and type gate: ruff's rules and format, and mypy --strict with the settings in
# pyproject.toml, zero findings.
# mypy reads the provider bindings' types (about a minute on a cold cache, seconds after).
lint: $(DEV_STAMP)  ## ruff (rules and format) and mypy --strict
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The emulated deploy cycles run in background processes from the start of the session (see
# tests/test_emulated_deploy.py); --durations shows the ten slowest tests.
test: lint $(CHECKOV) $(PROMTOOL) $(AMTOOL) $(POSTGRES) $(TORCH)  ## the whole test suite, as CI runs it
	$(PY) -m pytest --durations=10 $(PYTEST_ARGS)

# The one-minute inner loop: ruff, then the fast tests (profiles, synthesis assertions, snapshots,
# contracts, evaluators, operate with fake tools), parametrized for the default profile only.
# Before pushing, run make test: every profile, terraform, checkov, HCL exports, the emulator.
# The inner loop runs every test file, the default profile only, leaving out what is marked slow
# (a real tool or a process of its own), every_profile or emulator: a new test is in it unless
# marked, so no gate is left out by a list nobody updated.
check: $(DEV_STAMP) $(PROMTOOL) $(AMTOOL)  ## the one-minute inner loop (ruff and the fast tests on the default profile)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	GPU_PLATFORM_QUICK_CHECK=1 $(PY) -m pytest -q -p no:cacheprovider -n 2 --dist worksteal -m "not emulator and not slow and not every_profile" tests

clean:  ## remove generated output
	rm -rf cdktf.out .pytest_cache .mypy_cache .ruff_cache
