# lockstep: everything a developer or CI runs goes through here.
# Nothing installed by hand is assumed: `go` fetches the modules it needs.

GO        ?= go
PKGS      ?= ./...
# Every Go module in the repository (nested ones too, e.g. bench, examples,
# sample: `./...` stops at a nested go.mod, so the targets name each module).
MODULES   := $(patsubst %/go.mod,%,$(shell git ls-files --cached --others --exclude-standard '*go.mod' 2>/dev/null || echo go.mod))
MODULES   := $(patsubst go.mod,.,$(MODULES))
# e2e is the one module make test leaves out: it requires k8s.io/kubernetes
# to build a real control plane, and is not in go.work, so that none of its
# requirements reach the other modules' builds. make e2e builds, vets and
# tests it.
MODULES   := $(filter-out e2e,$(MODULES))
# Modules whose tests run without the race detector: bench's tests check
# its statistics and report writer only, and a race build of the etcd and
# gRPC it compares against costs minutes of a cold make test.
NORACE_MODULES := bench
RACE_MODULES   := $(filter-out $(NORACE_MODULES),$(MODULES))
# go.work puts every module in one workspace, so that one `go` command
# builds, vets and tests all of them with one build of what they share (the
# framework, Kubernetes' API types); .ci/check-workspace makes sure the
# workspace resolves each module as its own go.mod does. These are the
# package patterns of each set of modules, from the repository's root.
modpkgs         = $(foreach m,$(1),$(if $(filter .,$(m)),./...,./$(m)/...))
# The race set's packages whose tests take longest, named first: go test
# starts packages' builds and tests in the order it is given them, and on
# two cores a long test that starts last is the run's tail (in a warm run at
# load 40: upgradesim 375 s, framework 404 s, the sample's demo 152 s,
# codegen 115 s, the sample's scheduler 101 s and kubelet 95 s, lockstepctl
# 80 s, the tutorial and conformance 70 s each; upgradesim's two runs of 50
# random plans, one plan at a time while the machine is loaded, are 490 s
# of the package's run at load 45). The patterns after them add every
# other package once.
LONG_TEST_PKGS := ./framework/upgradesim ./framework ./sample/internal/demo ./codegen \
                  ./sample/internal/scheduler ./sample/internal/kubelet ./framework/cmd/lockstepctl \
                  ./docs/tutorialtest ./conformance
RACE_PKGS      := $(LONG_TEST_PKGS) $(call modpkgs,$(RACE_MODULES))
NORACE_PKGS    := $(call modpkgs,$(NORACE_MODULES))
# Tests of race-tested packages that run without the race detector
# instead, as a -run pattern; the race set skips them. The sample's rolling
# upgrade (ALONE_TESTS) checks real-time bounds of a whole control plane in
# one process (sessions of 1 s, a node grace period of 3 s), which the race
# detector's several-fold slowdown breaks on a loaded 2-core machine, and
# so does our own race build and tests beside it: it runs alone, once
# every other test is done; test-norace builds it, so that only its run
# waits for the end. The code generator's real-world corpus test
# (TestRealWorld) runs a build of its own (69 generated packages, without
# the race detector: its test process only waits for it), some 75 s of
# CPU; its suite test (TestJSONSchemaSuite) does the same with the JSON
# Schema Test Suite (187 generated packages, one per test file of each
# draft), some 60 s of CPU more from a cold cache. Neither checks a
# real-time bound, so they run in test-norace beside the race set, whose
# longest tests mostly wait on timers and sockets (upgradesim's test
# process used 31 s of CPU in its first 466 s at load 45): run after it
# they added their whole time to make test's. Beside it at load 42 they
# did not finish in 10 minutes, so they are given 25, a bound against a
# hang, not a measure of speed.
NORACE_TESTS     := ^(TestRollingUpgrade|TestRealWorld|TestJSONSchemaSuite)$$
ALONE_TESTS      := ^TestRollingUpgrade$$
ALONE_TEST_PKGS  := ./sample/internal/demo
CORPUS_TESTS     := ^(TestRealWorld|TestJSONSchemaSuite)$$
CORPUS_TEST_PKGS := ./codegen
# build, vet and test of a package share one set of flags: the build cache
# keys on them, and a plain `go vet` before `go test -race` compiles every
# package and its dependencies twice.
RACE_FLAGS     := -race
# make test vets inside `go test` (-vet=all: every analyzer, as `go vet`
# runs them, on each package and its tests): one build graph, in which a
# package's tests start once it and its tests are compiled and vetted,
# instead of after every package is vetted. The framework's tests, the
# longest, run while the rest still compiles.
TEST_VET       := -vet=all
# go test runs at most -p programs at once, compiles, links and test
# binaries alike, and a test binary holds its slot for as long as it runs.
# The default, one per core, let the framework's and the code generator's
# tests (minutes each, the framework's mostly waiting on timers and
# sockets: 80 s of CPU in 280 s) hold both slots of a two-core machine while
# nothing compiled, and the cold run used 162 % of two cores. With four,
# the longest tests start first and the rest of the race build goes on in
# the slots that the shorter of them free. Eight (six
# long tests at once) was tried at load 42: the framework's tests took
# 594 s instead of 404 s to 476 s, and a conformance case's request timed
# out, as the race set's own tests crowded each other.
TEST_P         := -p 4
# Test binaries and commands are linked without DWARF: nothing in make
# test reads it (stack traces and race reports come from the runtime's own
# tables), and it is a third of each link's CPU (5.1 s against 3.5 s for
# the sample's demo test), over some 110 links in a cold run. Linker flags
# are not in the compiler's cache keys: builds still share every package.
LINK_FLAGS     := -ldflags=-w
# Extra `go test` flags, e.g. TESTFLAGS=-json to time each test.
TESTFLAGS ?=
# Fuzz time per target for `make fuzz`; `make test` runs only the seed corpora.
FUZZTIME  ?= 30s

.PHONY: test vet check-generated check-workspace check-gofmt sync-workspace generate demo abuse fuzz soak bench bench-quick bench-reconnect bench-framework
.PHONY: scale scale-quick scale-report
.PHONY: test-phases test-race test-norace test-alone test-scale vet-race vet-norace e2e

## test: vet, check that Go files are gofmt-formatted, generated code is
## fresh and the workspace resolves each module as on its own, then every
## test, with the race detector outside NORACE_MODULES and NORACE_TESTS
## (fuzz seed corpora included). The two
## sets of modules build and test side by side (on two cores one set's
## links and tests fill the time the other waits), each vetted before it is
## tested; ALONE_TESTS run last, alone. The three checks start first, so
## that a failing one stops make test before any test starts. The set
## without the race detector starts once check-generated is done: both
## compile the standard library and the generator's dependencies without
## -race, and two go commands started together on a cold cache each
## compile what neither has cached yet (30 s of CPU compiled twice in a
## cold run, 15 s of it the runtime). The race set, which shares no
## compiled package with them, keeps both cores busy meanwhile.
## Vetting is part of each `go test` (TEST_VET); a package's tests wait for
## its vet, not for everyone's. The commands (main packages, which `go test`
## compiles but does not link) are linked once the tests are done, when
## everything they need is compiled and cached.
test:
	@$(MAKE) --no-print-directory -j3 test-phases

test-phases: check-workspace check-generated check-gofmt test-race test-norace test-alone test-scale

test-race: tools
	@echo "== go vet and test $(RACE_FLAGS) $(RACE_MODULES)"
	@$(GO) test $(RACE_FLAGS) $(TEST_VET) $(TEST_P) $(LINK_FLAGS) -count=1 -timeout 12m -skip '$(NORACE_TESTS)' $(TESTFLAGS) $(RACE_PKGS)
	@echo "== go build $(RACE_FLAGS) $(RACE_MODULES)"
	@$(GO) build $(RACE_FLAGS) $(LINK_FLAGS) $(RACE_PKGS)

test-norace: check-generated check-gofmt
	@echo "== go vet and test $(NORACE_MODULES)"
	@$(GO) test $(TEST_VET) $(LINK_FLAGS) -count=1 -timeout 12m $(TESTFLAGS) $(NORACE_PKGS)
	@echo "== go build $(NORACE_MODULES)"
	@$(GO) build $(LINK_FLAGS) $(NORACE_PKGS)
	@echo "== go test $(CORPUS_TESTS) in $(CORPUS_TEST_PKGS)"
	@$(GO) test -vet=off $(LINK_FLAGS) -count=1 -timeout 25m -run '$(CORPUS_TESTS)' $(TESTFLAGS) $(CORPUS_TEST_PKGS)
	@$(GO) test -vet=off $(LINK_FLAGS) -count=1 -run '^$$' $(ALONE_TEST_PKGS) >/dev/null

test-alone: test-race test-norace test-scale
	@echo "== go test $(ALONE_TESTS) in $(ALONE_TEST_PKGS), alone"
	@$(GO) test -vet=off $(LINK_FLAGS) -p 1 -count=1 -timeout 10m -run '$(ALONE_TESTS)' $(TESTFLAGS) $(ALONE_TEST_PKGS)

## test-scale: make scale's harness is in the e2e module (e2e/scale), which
## make test otherwise leaves out: it is vetted (its test files and the
## control plane package it uses) and its tests run, all but TestScale,
## the run itself: none starts a process; the scale runs themselves are
## make scale's. Its program,
## sample/cmd/lockstep-scale, is the sample module's, built and vetted with
## it above. The e2e module is built apart from the workspace, and its
## control plane package needs client-go's clientset and the Kubernetes
## packages around it. The race set has compiled every one of them by the
## time its tests end (sample/kubernetes and lockstep-scale import them, at
## the same versions), so test-scale runs after it, with the race
## detector, and compiles only e2e's own packages. Run beside the race set
## without -race, it compiled all of them a second time: 166 s of user CPU
## and 37 s of system from a cold cache. None of it has a real-time bound;
## the rolling upgrade waits for it.
test-scale: test-race
	@echo "== go vet and test $(RACE_FLAGS) e2e/scale (all but the run itself; make scale runs it)"
	@cd e2e && GOWORK=off GOFLAGS=-mod=mod $(GO) vet $(RACE_FLAGS) ./scale ./controlplane && \
	  GOWORK=off GOFLAGS=-mod=mod $(GO) test $(RACE_FLAGS) -vet=off $(LINK_FLAGS) -count=1 -skip '^TestScale$$' ./scale >/dev/null

## e2e: the tests against a real Kubernetes control plane (e2e/, a module
## of its own outside go.work): e2e/build.sh builds kube-apiserver,
## kube-controller-manager, kube-scheduler and etcd once per machine into
## ~/.cache/lockstep/kube-<version> (some 20 CPU-minutes the first time, 3 GB
## of Go build cache; nothing after), and the lockstep scheduler (a
## kube-scheduler with the sample's plugin) and the sample's extender on
## every run; then the module is vetted and its tests run one package at a
## time, each starting etcd and kube-apiserver of its own on 127.0.0.1. e2e
## replaces the framework, sample and examples with this clone's: when they
## gain a requirement, e2e/go.mod lags until tidied, and make e2e says so
## and builds with -mod=mod rather than fail.
E2E_TIMEOUT ?= 30m
e2e:
	@cd e2e && GOWORK=off $(GO) mod tidy -diff >/dev/null 2>&1 || \
	  echo "== e2e: go.mod is behind the modules it replaces (cd e2e && GOWORK=off go mod tidy); building with -mod=mod" >&2
	@cd e2e && bin=$$(GO=$(GO) ./build.sh) && \
	  echo "== go vet e2e" && GOWORK=off GOFLAGS=-mod=mod $(GO) vet ./... && \
	  echo "== go test e2e (binaries in $$bin)" && \
	  GOWORK=off GOFLAGS=-mod=mod LOCKSTEP_KUBE_BIN=$$bin $(GO) test $(LINK_FLAGS) -count=1 -p 1 -timeout $(E2E_TIMEOUT) -v $(TESTFLAGS) ./...

## tools: install what tests need beyond Go when it is missing: python3 for
## the conformance suite's Python peer; curl, which docs/tutorial.md runs
## (docs/tutorialtest); headless Chromium, which renders the
## status page (framework's TestStatusPageRendersInABrowser) and is installed
## only when running as root, else that test skips and says why.
.PHONY: tools
tools:
	@command -v python3 >/dev/null 2>&1 || { apt-get update && apt-get install -y python3; }
	@command -v curl >/dev/null 2>&1 || { apt-get update && apt-get install -y curl; }
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      echo "== installing chromium for the status page test"; \
	      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null || \
	        echo "== chromium could not be installed: the status page test will skip"; \
	    else echo "== no chromium and not root: the status page test will skip"; fi; }

## vet: build and vet every module, with the flags its tests build with.
vet: vet-race vet-norace

vet-race:
	@echo "== go vet $(RACE_FLAGS) $(RACE_MODULES)"
	@$(GO) build $(RACE_FLAGS) $(RACE_PKGS) && $(GO) vet $(RACE_FLAGS) $(RACE_PKGS)

vet-norace:
	@echo "== go vet $(NORACE_MODULES)"
	@$(GO) build $(NORACE_PKGS) && $(GO) vet $(NORACE_PKGS)

## generate: regenerate every generated file in every module.
generate:
	@./.ci/generate

## check-generated: fail when committed generated code differs from what the
## generator writes now. It runs beside the builds: the generator leaves a
## file whose content is unchanged untouched, so a fresh tree is only read.
check-generated:
	@./.ci/check-generated

## check-gofmt: fail, listing them, when tracked Go files (outside testdata)
## are not as gofmt formats them. About a second of CPU; the set without the
## race detector waits for it, as for check-generated.
check-gofmt:
	@./.ci/check-gofmt

## check-workspace: fail when go.work would build a module with other
## versions than its own go.mod resolves, or a go.mod or go.sum is untidy.
check-workspace:
	@./.ci/check-workspace

## sync-workspace: raise each module's requirements to the versions the
## workspace builds with (go work sync), then tidy each module on its own.
sync-workspace:
	@$(GO) work sync && for m in $(MODULES); do (cd $$m && GOWORK=off $(GO) mod tidy); done && $(GO) work sync

## demo: the sample control plane through a rolling upgrade (sample/ is a
## module of its own, so the demo runs inside it).
demo:
	cd sample && $(GO) run ./cmd/lockstep-demo -out demo-output

## abuse: the containment attacks of docs/security.md at the sizes they
## were found at, against the sample's node controller built from this
## checkout and run as a process of its own under mutual TLS; for each, its
## peak RSS and what a legitimate kubelet got (its calls' p99, its node
## published, its watch opened); attacks 9 and 10, a hostile server's
## against lockstepctl built from this checkout: its peak RSS, its runs'
## p99, what reached the terminal. Tens of minutes. ABUSE="-scale small"
## for a quick run, ABUSE="-attacks 1,4" for some of them. Their bounded
## forms, with assertions, run in make test.
abuse:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  $(GO) build -o "$$tmp/lockstepctl" ./framework/cmd/lockstepctl && cd sample && \
	  $(GO) build -o "$$tmp/nodecontroller" ./cmd/nodecontroller && \
	  $(GO) run ./cmd/abuse -nodecontroller "$$tmp/nodecontroller" -lockstepctl "$$tmp/lockstepctl" $(ABUSE)

## scale-quick, scale: the founding case at a cluster's scale, both paths
## one after the other, each at each node count on a control plane of its
## own (etcd, kube-apiserver and kube-controller-manager of the e2e module,
## built once per machine by e2e/build.sh, on 127.0.0.1): lockstep's (hollow
## nodes under mutual TLS heartbeating at 1 Hz to the sample's node
## controller, which persists Node objects, their Ready transitions and a
## 5-minute refresh to the API server; kube-controller-manager without its
## node lifecycle controller) and Kubernetes' (the same hollow nodes renewing
## Leases every 10 s and patching NodeStatus through client-go; its node
## lifecycle controller with its defaults). Each run measures durable
## writes/s from etcd's own metrics and the API server's, CPU and RSS of
## every process, heartbeat p99 and bind -> Running p99 (over the whole run
## and the placement, and apart over the steady window, P9's figures), the
## steady window's lapses and Ready flaps of live nodes, and the time to
## notice killed nodes (e2e/scale, driving sample/cmd/lockstep-scale). make
## scale is P9's run (5,000 nodes, 30 pods each), both paths, at most 20
## minutes each and 45 in all (SCALE_NODES, SCALE_PODS, SCALE_PATHS,
## SCALE_FLAGS to change). Lockstep's path places pods once 99 % of the nodes
## are Ready at once, at most 600 binds a second, with the session TTL and
## grace below; the hollow nodes start 50 a second in one process per 1,250
## nodes, and the node controller runs with GOGC 400 within a 1,700 MiB
## memory limit (lockstep-scale's defaults; docs/design.md says what each
## buys). Kubernetes' path did not register 5,000 nodes on a loaded 2-core
## machine; its record says so, and P10 compares the paths at the largest N
## both ran (SCALE_NODES=2000). make scale adds its runs to
## docs/scale/results.json and writes docs/scale.md and its plot from them.
## scale-quick (200 nodes, 2 pods each; the victims killed once registered;
## on Kubernetes' path Leases renewed every 2 s and kube-controller-manager's
## node monitor grace period 8 s, not its defaults, so that the run stays
## under two minutes: P10's comparison is the full run's, and the report
## says so) prints its report and keeps nothing. Every process they start
## is stopped and etcd's data removed.
SCALE_NODES ?= 5000
SCALE_PODS  ?= 30
SCALE_PATHS ?= lockstep,kubernetes
# Lockstep's session TTL and node grace in make scale: a killed node is
# noticed within about TTL + grace + the Node object's write (3.8 to 3.9 s
# at 5,000 nodes with these, on the machine alone; docs/design.md).
SCALE_TTL   ?= 4s
SCALE_GRACE ?= 250ms
SCALE_FLAGS ?=
# The program, the harness's test binary and the control plane (only that:
# no lockstep scheduler) are built at once, then the harness runs from its
# package's directory, as go test runs it. If a step fails, the builds
# still running in the background are stopped and waited for before their
# directory is removed.
scale_run = set -e; tmp=$$(mktemp -d); prog=; harness=; \
	  trap 'kill $$prog $$harness 2>/dev/null || true; wait; rm -rf "$$tmp"' EXIT; \
	  $(GO) build -C sample $(LINK_FLAGS) -o "$$tmp/lockstep-scale" ./cmd/lockstep-scale & prog=$$!; \
	  GOWORK=off GOFLAGS=-mod=mod $(GO) test -C e2e $(LINK_FLAGS) -c -o "$$tmp/scale.test" ./scale & harness=$$!; \
	  bin=$$(cd e2e && GO=$(GO) ./build.sh control-plane); wait $$prog; prog=; wait $$harness; harness=; \
	  cd e2e/scale && LOCKSTEP_KUBE_BIN=$$bin "$$tmp/scale.test" -test.count=1 -test.v -test.timeout $(1) -test.run '^TestScale$$' \
	    -scale.bin="$$tmp/lockstep-scale" $(2)
scale-quick:
	@$(call scale_run,10m,-scale.nodes=200 -scale.pods=2 -scale.steady=20s -scale.kills=3 -scale.kill-at-registration -scale.paths=$(SCALE_PATHS) \
	  -scale.kcm-args="--node-monitor-grace-period=8s --node-monitor-period=1s" -scale.args=--lease-every=2s \
	  -scale.results="$$tmp/results.json" -scale.docs="$$tmp/docs" $(SCALE_FLAGS)) && cat "$$tmp/docs/scale.md"

scale:
	@$(call scale_run,45m,-scale.nodes=$(SCALE_NODES) -scale.pods=$(SCALE_PODS) -scale.steady=60s -scale.kills=5 -scale.paths=$(SCALE_PATHS) \
	  -scale.run-timeout=20m -scale.place-for=5m -scale.ready-fraction=0.99 -scale.session-ttl=$(SCALE_TTL) -scale.node-grace=$(SCALE_GRACE) \
	  -scale.results=$(CURDIR)/docs/scale/results.json -scale.docs=$(CURDIR)/docs $(SCALE_FLAGS))

## scale-report: docs/scale.md and its plot written again from
## docs/scale/results.json, with no run.
scale-report:
	@cd e2e && GOWORK=off GOFLAGS=-mod=mod $(GO) test -count=1 -run '^TestScale$$' ./scale \
	  -args -scale.results=$(CURDIR)/docs/scale/results.json -scale.docs=$(CURDIR)/docs

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

## bench-reconnect: the reconnect gap (P6) and crash detection alone, at
## their full length, into docs/bench/crash-reconnect.md with its plot
## (about 3 minutes): the report design.md cites for the prober.
bench-reconnect:
	cd bench && $(GO) run ./cmd/lockstep-bench -only reconnect,crash -written-by 'make bench-reconnect' \
	  -out ../docs/bench/crash-reconnect.md -plots crash-reconnect

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
