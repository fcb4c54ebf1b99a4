# pyscheduler — every target sets up what it needs on a fresh machine (Python 3.11 and Go 1.26 present).
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: install controlplane test unit lint run demo e2e e2e-kind bench upstream-bench differential chaos dev-cluster-up dev-cluster-down clean quantity-golden image

install: $(VENV)/.installed

$(VENV)/.installed: setup.cfg pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

# Builds kube-apiserver, kube-scheduler, kube-controller-manager, kubectl, kwok and etcd once into
# ~/.cache/pyscheduler/controlplane/<versions> (PYSCHEDULER_CACHE overrides); later runs reuse it.
controlplane: install
	@bash e2e/controlplane/build.sh >/dev/null

# Unit tests, plugin tests and the integration tests against the real local control plane.
test: install controlplane
	$(BIN)/pytest -q $(PYTEST_ARGS)

unit: install
	$(BIN)/pytest -q -m "not cluster" $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check pyscheduler tests conftest.py bench e2e examples krew
	$(BIN)/ruff format --check pyscheduler tests conftest.py bench e2e examples krew
	$(BIN)/mypy
	$(BIN)/mypy --config-file tests/mypy.ini tests bench conftest.py krew/build.py

# With KUBECONFIG: run the scheduler against that cluster. Without: start a local control plane with
# fake nodes, run the scheduler and a demo workload so you can watch pods get scheduled (Ctrl-C stops).
run: install controlplane
	@if [ -n "$$KUBECONFIG" ]; then \
	  exec $(BIN)/pyscheduler run --kubeconfig "$$KUBECONFIG" --no-leader-elect $(ARGS); \
	else \
	  exec $(BIN)/pyscheduler demo $(ARGS); \
	fi

demo: run

dev-cluster-up: install controlplane
	$(BIN)/pyscheduler dev-cluster up --nodes 5 --with-controller-manager

dev-cluster-down: install
	$(BIN)/pyscheduler dev-cluster down

# End-to-end suite against the local control plane (controller manager and KWOK on).
e2e: install controlplane
	$(BIN)/pytest -q e2e $(PYTEST_ARGS)

# The same suite against a kind cluster (needs a Docker engine).
e2e-kind: install
	@bash e2e/kind.sh

differential: install controlplane
	$(BIN)/python -m bench.differential $(ARGS)

# Fault injection judged by an independent invariant checker (bench/chaos): ARGS="--scenario NAME",
# "--minutes M", "--nodes N", "--soak". Ends with one "chaos: ..." line; non-zero if anything was lost,
# overcommitted or bound twice.
chaos: install controlplane
	$(BIN)/python -m bench.chaos $(ARGS)

bench: install controlplane
	$(BIN)/python -m bench.run $(ARGS)

# Upstream's scheduler_perf test cases, read from the pinned module, both schedulers
# (e.g. ARGS="--label performance --test-case SchedulingBasic"; ARGS="--list" shows what runs and what is skipped).
upstream-bench: install controlplane
	$(BIN)/python -m bench.upstream $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info .dev-cluster

# Regenerates tests/unit/quantity_golden.jsonl from apimachinery's own resource.ParseQuantity.
quantity-golden:
	cd e2e/controlplane && go build -o $(CURDIR)/.venv/quantity-golden ./cmd/quantity-golden
	$(PYTHON) e2e/controlplane/cmd/quantity-golden/gen.py | $(VENV)/quantity-golden > tests/unit/quantity_golden.jsonl

# The image from the Dockerfile without a Docker daemon (buildah; needs buildah and debootstrap:
# apt-get install buildah debootstrap podman runc). See docs/deploy.md.
image:
	bash e2e/image/build.sh

# Kubernetes' own [sig-scheduling] e2e specs (the pinned release), on a fresh local cluster per scheduler:
# kube-scheduler as the control, then pyscheduler as the default scheduler. Builds the e2e binary once
# (e2e/conformance/build.sh). ARGS: --focus RE, --skip RE, --scheduler kube|py|both, --nodes N.
# Reports under .conformance/; last line "conformance: pyscheduler P/N passed, kube-scheduler K/N passed".
.PHONY: conformance
conformance: install controlplane
	$(BIN)/python -m pyscheduler.testing.conformance $(ARGS)
