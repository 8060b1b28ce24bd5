# softalloc: `make demo` runs a real recommend on the embedded simulator;
# `make test` is what CI runs.
GO ?= go
BIN := bin/softalloc

.PHONY: build test test-race test-sim bench demo lint fuzz clean

build:
	$(GO) build -o $(BIN) ./cmd/softalloc

# The race pass covers every package but two kinds of long test: the
# simulator's paper-behaviour tests carry `//go:build !race` (each trial is one
# goroutine, and the race detector would make them ten times slower), and the
# testbed's end-to-end tests drive real servers for minutes. Both run after it,
# without -race.
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /testbed/e2e)
	$(GO) test -count=1 -run 'Paper|MVA|Behaviour|Fig' ./internal/sim/...
	$(GO) test -count=1 -timeout 15m ./testbed/e2e/

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x ./internal/sim/...
	$(GO) test -run '^$$' -bench . -benchmem ./algorithms/...

demo: build
	$(BIN) recommend --topology 1/2/1/2
	$(BIN) recommend --topology 1/4/1/4

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@if $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -version >/dev/null 2>&1; then \
		$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...; \
	else echo "staticcheck unavailable: skipped"; fi

fuzz:
	$(GO) test ./internal/topology -run '^$$' -fuzz FuzzParseTopology -fuzztime 20s
	$(GO) test ./internal/topology -run '^$$' -fuzz FuzzParseAllocation -fuzztime 20s

clean:
	rm -rf bin

# ---- testbed: real servers on loopback for the live runner (testbed/README.md) ----
# testbed-up starts Apache, the bulletin-board app, MariaDB, Prometheus and the
# exporters on 127.0.0.1:18xxx (idempotent; state and logs in
# $${TMPDIR:-/tmp}/softalloc-testbed); testbed-down stops them all.
# testbed-e2e runs the end-to-end tests against it (they start it if needed).
.PHONY: testbed-up testbed-down testbed-e2e
testbed-up:
	testbed/testbed.sh up

testbed-down:
	testbed/testbed.sh down

testbed-e2e:
	$(GO) test -count=1 -timeout 15m -v ./testbed/e2e/
# ---- end testbed ----
