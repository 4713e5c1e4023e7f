# The test rig: a real control plane on loopback (see rig/ and tools/).
# Included from the Makefile; every path is relative to the repository root.

RIG_DIR ?= .rig
RIG_BIN ?= bin
# Extra flags for `rig up`, e.g. RIG_UP_FLAGS=--control-plane-only, or
# RIG_UP_FLAGS=--no-operators for the full rig without the operators (KServe, KubeRay, Kubeflow Trainer
# with JobSet, the Training Operator, Kueue)
RIG_UP_FLAGS ?=

.PHONY: tools rig-images cluster-up cluster-down cluster-status e2e

# The machine's packages a real node runs on (as root, from apt), then the
# pinned etcd, Kubernetes components, kubelet, kubectl, kwok and operators
# into bin/; a second run does nothing.
tools: ## the rig's binaries (control plane, kubelet, operators) into bin/, from the module proxy: 40 minutes cold on 2 cores, an hour beside make test
	tools/host-packages
	tools/build

# The programs of the real nodes' images (rig/images, and aiconform itself
# for the in-cluster Job), static, in $(RIG_BIN)/images/; the rig assembles
# and imports the images itself.
rig-images: ## the programs of the real nodes' images, into bin/images/
	CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o $(RIG_BIN)/images/ ./rig/images/... ./cmd/aiconform

# bin/rig is rebuilt every time (seconds, cached by Go): it must be a stable
# file because the detached egress proxy keeps running from it.
$(RIG_BIN)/rig: FORCE
	go build -o $@ ./rig/cmd/rig

.PHONY: FORCE
FORCE:

# Starts the rig detached (state and PIDs in $(RIG_DIR)/), installs the five
# operators on it (their processes recorded there too), and prints the
# admin kubeconfig path on stdout. RIG_UP_FLAGS=--real-nodes=1 adds a real
# node (root only).
cluster-up: tools $(RIG_BIN)/rig rig-images ## start the rig with the operators; prints the kubeconfig path
	$(RIG_BIN)/rig up --dir $(RIG_DIR) --bin $(RIG_BIN) $(RIG_UP_FLAGS)

# Removes the operators' webhook configurations, then stops exactly the
# PIDs cluster-up recorded.
cluster-down: $(RIG_BIN)/rig ## stop the rig cluster-up started
	$(RIG_BIN)/rig down --dir $(RIG_DIR)

# PIDs and RSS of the running rig.
cluster-status: $(RIG_BIN)/rig ## PIDs and memory of the running rig
	$(RIG_BIN)/rig status --dir $(RIG_DIR)

# End-to-end tests. They start a rig of their own, or reuse the one in
# $(RIG_DIR) when RIG_REUSE=1. ./report's opens report.html in the Chromium
# that `make tools` installs.
e2e: tools $(RIG_BIN)/rig rig-images ## end-to-end tests on the rig (what CI runs after make test)
	AICONFORM_RIG_BIN=$(CURDIR)/$(RIG_BIN) $(if $(filter 1,$(RIG_REUSE)),AICONFORM_RIG_DIR=$(CURDIR)/$(RIG_DIR)) \
		go test -tags e2e -count=1 -timeout 45m ./rig/... ./e2e/... ./report
