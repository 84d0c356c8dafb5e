# lockstep: everything a developer or CI runs goes through here.
# Nothing installed by hand is assumed: `go` fetches the modules it needs.

GO        ?= go
PKGS      ?= ./...
# Every Go module in the repository (nested ones too, e.g. bench, examples,
# sample: `./...` stops at a
# nested go.mod, so each target loops over these directories).
MODULES   := $(patsubst %/go.mod,%,$(shell git ls-files --cached --others --exclude-standard '*go.mod' 2>/dev/null || echo go.mod))
MODULES   := $(patsubst go.mod,.,$(MODULES))
# Modules whose tests run without the race detector: bench's tests check
# its statistics and report writer only, and a race build of the etcd and
# gRPC it compares against costs minutes of a cold make test.
NORACE_MODULES := bench
# Fuzz time per target for `make fuzz`; `make test` runs only the seed corpora.
FUZZTIME  ?= 30s

.PHONY: test vet check-generated generate demo fuzz soak bench bench-quick bench-framework

## test: vet, check generated code is fresh, then every test with the race
## detector (fuzz seed corpora included).
test: vet check-generated tools
	@set -e; for m in $(MODULES); do echo "== go test $$m"; \
	  race=-race; case " $(NORACE_MODULES) " in *" $$m "*) race= ;; esac; \
	  (cd $$m && $(GO) test $$race -count=1 -timeout 12m $(PKGS)); done

## tools: install what tests need beyond Go when it is missing: python3 for
## the conformance suite's Python peer; headless Chromium, which renders the
## status page (framework's TestStatusPageRendersInABrowser) and is installed
## only when running as root, else that test skips and says why.
.PHONY: tools
tools:
	@command -v python3 >/dev/null 2>&1 || { apt-get update && apt-get install -y python3; }
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      echo "== installing chromium for the status page test"; \
	      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null || \
	        echo "== chromium could not be installed: the status page test will skip"; \
	    else echo "== no chromium and not root: the status page test will skip"; fi; }

## vet: build and vet every module.
vet:
	@set -e; for m in $(MODULES); do echo "== go vet $$m"; (cd $$m && $(GO) build $(PKGS) && $(GO) vet $(PKGS)); done

## generate: regenerate every generated file in every module.
generate:
	@set -e; for m in $(MODULES); do (cd $$m && $(GO) generate $(PKGS)); done

## check-generated: fail when committed generated code differs from what the
## generator writes now.
check-generated:
	@./.ci/check-generated

## demo: the sample control plane through a rolling upgrade (sample/ is a
## module of its own, so the demo runs inside it).
demo:
	cd sample && $(GO) run ./cmd/lockstep-demo -out demo-output

## fuzz: run every fuzz target for FUZZTIME each.
fuzz:
	@set -e; for pkg in $$($(GO) list -f '{{.Dir}}' $(PKGS)); do \
	  for target in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$pkg/*_test.go 2>/dev/null | sed 's/^func //'); do \
	    echo "== $$target in $$pkg"; \
	    (cd $$pkg && $(GO) test -run='^$$' -fuzz="^$$target$$" -fuzztime=$(FUZZTIME) .); \
	  done; \
	done

## soak: long randomised upgrade runs.
soak:
	$(GO) test -race -count=1 -timeout 60m -run 'Soak' -tags soak $(PKGS)

## bench: the comparison suite (bench/, a nested module): lockstep beside
## gRPC, etcd, net/http and connect-go, written to docs/benchmarks.md with
## its plots in docs/bench/. Under 20 minutes on 2 cores.
bench:
	cd bench && $(GO) run ./cmd/lockstep-bench -out ../docs/benchmarks.md

## bench-quick: the same suite for a few seconds per workload, written to
## bench/out/ (a check that it runs; its figures are not to be quoted).
bench-quick:
	@mkdir -p bench/out
	cd bench && $(GO) run ./cmd/lockstep-bench -quick -rounds 1 -out out/benchmarks.md

## bench-framework: the framework's own Go benchmarks, with the machine's
## facts, into docs/bench/latest.txt (their analysis is in
## docs/framework-benchmarks.md; compare runs with benchstat).
BENCHTIME ?= 2s
bench-framework:
	@mkdir -p docs/bench
	@{ echo "date: $$(date -u +%Y-%m-%dT%H:%M:%SZ)"; $(GO) version; echo "cores: $$(nproc)"; \
	   grep -m1 'model name' /proc/cpuinfo || true; \
	   $(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) -timeout 60m $(PKGS); } \
	  2>&1 | tee docs/bench/latest.txt
