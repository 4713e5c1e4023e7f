# aiconform: the commands a developer and CI run. `make help` lists them.

GO ?= go

.PHONY: help build test demo vet docs fixtures bench clean release-snapshot

help: ## list the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 20

# -buildvcs=auto stamps the commit `aiconform version` prints, even where
# GOFLAGS turns stamping off; outside a git checkout it stamps nothing.
build: ## build bin/aiconform
	$(GO) build -buildvcs=auto -o bin/aiconform ./cmd/aiconform

test: ## unit tests, vet and the docs drift check: no cluster needed
	$(GO) vet ./...
	$(GO) test ./...

# A recording cannot answer a probe, so the demo shows secure_accelerator_access
# not shown at work and exits 1 (a MUST not met), as a read-only run of a real
# cluster does; 2 and 3 are still errors.
demo: build ## run every check on the recorded demo cluster (exit 1, as the README says); the report lands in demo-report/
	@bin/aiconform check all --fixture demo --out demo-report; rc=$$?; \
	if [ $$rc -eq 1 ]; then echo "demo: exit 1, as expected: a MUST only a probe shows (see the README)"; else exit $$rc; fi

docs: ## regenerate docs/checks.md from the checks' metadata
	$(GO) run ./docs/gen

fixtures: tools ## re-record fixtures/*.yaml from a real API server (needs `make tools`)
	$(GO) run ./fixtures/gen -bin $(CURDIR)/bin

bench: ## benchmarks: `check all` over a 2,000-node, 50,000-pod recording
	$(GO) test -run '^$$' -bench . -benchmem ./bench/

# tools/release: a module of its own (krew's and cyclonedx-gomod's
# dependencies are not the main module's); see docs/release.md.
# RELEASE_PLATFORMS=os/arch,... builds only those (CI builds the host's).
RELEASE_PLATFORMS ?=
release-snapshot: ## build a reproducible snapshot release into dist/: archives, SBOMs, checksums, OCI image, krew manifest
	cd tools/release && $(GO) run . -root $(CURDIR) -out $(CURDIR)/dist $(if $(RELEASE_PLATFORMS),-platforms $(RELEASE_PLATFORMS))

clean: ## remove built binaries' outputs (not the rig's binaries)
	rm -rf bin/aiconform demo-report dist

include rig.mk
