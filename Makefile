# softalloc: `make demo` runs a real recommend on the embedded simulator;
# `make test` is what CI runs.
GO ?= go
BIN := bin/softalloc

.PHONY: build test test-deps fmt-check bench demo evaluate evaluate-fixed evaluate-replicas lint fuzz clean man

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/softalloc

# The race pass covers every package but two kinds of long test: tests that run
# many simulated trials are named TestPaper*, TestMVAAgreement, TestBehaviour*
# or TestSlow* (each trial is one goroutine; the race detector would make them
# ten times slower; most live in files with `//go:build !race`, and the race
# pass skips the rest by name), and the testbed's end-to-end tests drive real
# servers for minutes. Both run after it, without -race.
#
# The end-to-end tests mostly wait on capped servers, whose groups outweigh
# any process outside the testbed (TestTestbedHoldsItsCapsBesideOtherWork),
# so the long simulated tests, all CPU, run beside them at nice 19, and their
# output follows the end-to-end tests'. The long tests that drive servers
# or processes of their own on a clock (LONG_BY_CLOCK) run before, alone.
LONG_TESTS = ^Test(Paper|MVAAgreement|Behaviour|Slow)
# The race pass's longest packages first: they wait on real servers' scrapes
# for 3 minutes each, and started last (import-path order) they ran 90 s past
# the others (352 s against 264 s, one run each).
SLOW_FIRST = ./internal/runner/live ./internal/cli
PACKAGES = $(SLOW_FIRST) $$($(GO) list ./... | grep -v -e /testbed/e2e -e /internal/runner/live$$ -e /internal/cli$$)
LONG_BY_CLOCK = ./examples/locust ./internal/runner/live
LONG_BESIDE_E2E = $$($(GO) list ./... | grep -v -e /testbed/e2e -e /examples/locust$$ -e /internal/runner/live$$)
# The race pass runs three packages at once: the real servers' tests of
# internal/runner/live, internal/discover and examples/locust mostly wait on
# them (-p 3: 290 s against about 400 s with -p 2).
test: test-deps lint
	$(GO) test -race -count=1 -p 3 -timeout 20m -skip '$(LONG_TESTS)' $(PACKAGES)
	$(GO) test -count=1 -run '$(LONG_TESTS)' $(LONG_BY_CLOCK)
	@long=$$(mktemp); nice -n 19 $(GO) test -count=1 -run '$(LONG_TESTS)' $(LONG_BESIDE_E2E) >$$long 2>&1 & pid=$$!; \
	echo "$(GO) test -count=1 -timeout 35m ./testbed/e2e/ (and the long simulated tests beside it, nice 19)"; \
	$(GO) test -count=1 -timeout 35m ./testbed/e2e/; e2e=$$?; \
	wait $$pid; long_rc=$$?; echo "== the long simulated tests, run beside the end-to-end tests:"; cat $$long; rm -f $$long; \
	[ $$e2e -eq 0 ] && [ $$long_rc -eq 0 ]

# What a fresh Debian machine lacks for the tests: the real servers (as root,
# or with passwordless sudo; else it says what is missing), the Go modules,
# the Java app's Maven dependencies.
test-deps:
	scripts/test-deps.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2x -cpu 1 ./internal/sim/...
	$(GO) test -run '^$$' -bench . -benchmem ./algorithms/...
	$(GO) test -run '^$$' -bench 'RecommendCampaign|RampCampaign' -benchtime 2x -cpu 1 ./internal/evaluate/

demo: build
	$(BIN) recommend --topology 1/2/1/2 --report bin/demo-report.html
	@echo "the campaign's page: bin/demo-report.html"
	$(BIN) recommend --topology 1/4/1/4

# Regenerates docs/evaluation.md, its JSON twin and plots: one run on this machine,
# adaptive trials (at most 2 min measured), judged on the fixed-length reference in
# docs/fixed: its grids (evaluation-grids.jsonl) and the coverage's long-run means are
# the ground truth, measured once. make evaluate-fixed regenerates that, with 2 min
# fixed trials as the evaluation had before trials were adaptive; evaluate refuses a
# reference the simulator no longer reproduces.
evaluate: build
	$(BIN) evaluate --out docs --runtime 2m --reference docs/fixed/evaluation.json

evaluate-fixed: build
	$(BIN) evaluate --fixed --out docs/fixed --runtime 2m

# docs/replicas-evaluation.md: at every count of 1/2..8/1/2 and 1/2..8/1/4, the
# campaign at that count judged on a grid at that count (issue 37); CPU-heavy.
evaluate-replicas: build
	nice -n 10 $(BIN) evaluate --replicas --out docs --runtime 2m

# gofmt, vet and staticcheck are part of the test: a lint finding fails CI.
fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

lint: fmt-check
	$(GO) vet ./...
	@if $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -version >/dev/null 2>&1; then \
		$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...; \
	else echo "staticcheck unavailable: skipped"; fi

# Budgets are executions (5-25 s each here), not durations: a duration
# can end the run with a spurious "context deadline exceeded" and no failing
# input (a race in Go 1.26's fuzz coordinator, go.dev/issue/75804).
fuzz:
	$(GO) test ./internal/topology -run '^$$' -fuzz FuzzParseTopology -fuzztime 140000x
	$(GO) test ./internal/topology -run '^$$' -fuzz FuzzParseAllocation -fuzztime 120000x
	$(GO) test ./internal/topology -run '^$$' -fuzz FuzzParseAllocationIn -fuzztime 60000x -fuzzminimizetime 3s
	$(GO) test ./internal/topology -run '^$$' -fuzz FuzzParseReplicas -fuzztime 60000x -fuzzminimizetime 3s
	$(GO) test ./internal/topology -run '^$$' -fuzz FuzzParseSurge -fuzztime 60000x -fuzzminimizetime 3s
	$(GO) test ./internal/topology -run '^$$' -fuzz FuzzParseDeployment -fuzztime 100000x -fuzzminimizetime 3s
	$(GO) test ./internal/topology -run '^$$' -fuzz FuzzParseTopologyRange -fuzztime 20000x -fuzzminimizetime 3s
# Inputs of these are kilobytes: minimizing each new one for the default 60 s
# would take all the time, so minimization is cut short.
	$(GO) test ./internal/runner/exec -run '^$$' -fuzz FuzzParseObservation -fuzztime 140000x -fuzzminimizetime 3s
	$(GO) test ./internal/runner/exec -run '^$$' -fuzz FuzzParseWindow -fuzztime 60000x -fuzzminimizetime 3s
	$(GO) test ./internal/runner/replay -run '^$$' -fuzz FuzzRead -fuzztime 50000x -fuzzminimizetime 3s
	$(GO) test ./internal/workload -run '^$$' -fuzz FuzzParse -fuzztime 60000x -fuzzminimizetime 3s
	$(GO) test ./internal/sim/classes -run '^$$' -fuzz FuzzParse -fuzztime 23000x -fuzzminimizetime 3s
	$(GO) test ./internal/sim -run '^$$' -fuzz FuzzParseModel -fuzztime 70000x -fuzzminimizetime 3s
	$(GO) test ./internal/journal -run '^$$' -fuzz FuzzOpen -fuzztime 4000x -fuzzminimizetime 3s
	$(GO) test ./internal/cli -run '^$$' -fuzz FuzzParseMeasured -fuzztime 30000x -fuzzminimizetime 3s
	$(GO) test ./internal/cli -run '^$$' -fuzz FuzzParseBaseline -fuzztime 40000x -fuzzminimizetime 3s
	$(GO) test ./internal/cli -run '^$$' -fuzz FuzzFlagValues -fuzztime 40000x -fuzzminimizetime 3s
	$(GO) test ./internal/runner/live -run '^$$' -fuzz FuzzParseConfig -fuzztime 30000x -fuzzminimizetime 3s
	$(GO) test ./internal/evaluate -run '^$$' -fuzz FuzzReadGrids -fuzztime 20000x -fuzzminimizetime 3s
	$(GO) test ./internal/accesslog -run '^$$' -fuzz FuzzParse -fuzztime 30000x -fuzzminimizetime 3s

# Man pages, one per command, from the commands' own help.
man:
	$(GO) run ./cmd/softalloc-man -out man

clean:
	rm -rf bin man

# ---- testbed: real servers on loopback for the live runner (testbed/README.md) ----
# testbed-up starts Apache, the bulletin-board app, MariaDB, Prometheus and the
# exporters on 127.0.0.1:18xxx (idempotent; state and logs in
# $${TMPDIR:-/tmp}/softalloc-testbed); testbed-down stops them all.
# testbed-e2e runs the end-to-end tests against it (they start it if needed).
# STACK=java starts the Java app tier (embedded Tomcat, HikariCP) instead of
# the Go one, STACK=wordpress Debian's WordPress on php-fpm (each stack is a
# folder under testbed/stacks/); live-evaluate measures softalloc on it and
# regenerates docs/live-evaluation.md, its JSON twin and plots (about 30 minutes).
.PHONY: testbed-up testbed-down testbed-e2e live-evaluate
STACK ?= go
testbed-up:
	STACK=$(STACK) testbed/testbed.sh up

testbed-down:
	testbed/testbed.sh down

testbed-e2e:
	$(GO) test -count=1 -timeout 15m -v ./testbed/e2e/

live-evaluate: build
	$(GO) run ./testbed/liveeval -out docs
# ---- end testbed ----
