# The Makefile is the only way anyone, CI included, builds, tests, benches and
# demos readside. See README.md.

GO        ?= go
BIN       ?= bin/readside
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# Packages whose tests need the test bed (MariaDB + Kafka).
E2E_PKGS  ?= ./expr/... ./cdc/... ./projections/... ./sinks/... ./verify/... ./reshard/... ./rebuild/... ./e2e/...
# The same in bench/, a module of its own (bench/go.mod).
BENCH_E2E_PKGS ?= ./internal/...
E2E_TIMEOUT ?= 40m
# Every e2e test's wall time, one "seconds<TAB>package<TAB>test" line each
# (e2e/testbed/durations.go), rewritten by each `make e2e`.
E2E_TIMES ?= $(CURDIR)/.e2e-times
# benchall is built from the bench module and run from here, so the
# paths in BENCH_FLAGS and -out are the checkout's.
BENCHALL  = $(GO) -C bench build -o $(CURDIR)/bin/benchall ./cmd/benchall && bin/benchall

.PHONY: all build docker test testbed-install test-unit test-helm test-vitess e2e e2e-times soak e2e-kfake e2e-containers bench bench-quick bench-peers bench-instructions demo lint testbed-up testbed-down clean

all: build

## build: the static readside binary in bin/
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/readside

## docker: the container image (deploy/Dockerfile; needs a Docker engine)
docker:
	docker build -f deploy/Dockerfile --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t readside:$(VERSION) .

## test: unit tests with -race, the Vitess routing check, the Helm chart's lint and template, then the e2e suite on real MariaDB and Apache Kafka
test: testbed-install test-unit test-vitess test-helm e2e

## testbed-install: the tools tests run beside the servers (promtool from Debian package prometheus; chromium), installed when root; the schema registry (Apicurio Registry) built by Maven and Quarkus from e2e/testbed/apicurio/pom.xml into the user cache dir
testbed-install:
	$(GO) run ./e2e/cmd/testbed install

## test-unit: tests that need no services (e2e tests skip themselves), the product's and bench's
test-unit:
	env -u E2E -u E2E_BROKER $(GO) test -race -count=1 ./...
	env -u E2E -u E2E_BROKER $(GO) -C bench test -race -count=1 ./...

## test-helm: helm lint and helm template on deploy/helm/readside, the rendered objects checked (a module of its own: deploy/helm/chartcheck, helm.sh/helm/v3 pinned in its go.mod)
test-helm:
	cd deploy/helm/chartcheck && env -u E2E -u E2E_BROKER $(GO) test -count=1 ./...

## test-vitess: readside's shard routing against Vitess's own xxhash vindex (a module of its own: e2e/vitessdiff)
test-vitess:
	cd e2e/vitessdiff && env -u E2E -u E2E_BROKER $(GO) test -count=1 ./...

## e2e: the end-to-end suite; starts MariaDB and Kafka (E2E_BROKER=kafka|kfake|external); ends with the 20 slowest tests (e2e-times), pass or fail
e2e:
	@rm -f $(E2E_TIMES)
	rc=0; \
	E2E=1 E2E_FAILED_LOGS=$(CURDIR)/.e2e-failed-logs E2E_TIMES=$(E2E_TIMES) $(GO) test -count=1 -p 1 -timeout $(E2E_TIMEOUT) $(E2E_PKGS) || rc=$$?; \
	if [ $$rc -eq 0 ]; then E2E=1 E2E_TIMES=$(E2E_TIMES) $(GO) -C bench test -count=1 -p 1 -timeout $(E2E_TIMEOUT) $(BENCH_E2E_PKGS) || rc=$$?; fi; \
	$(MAKE) --no-print-directory e2e-times; exit $$rc

## e2e-times: the 20 slowest tests of the last e2e run (each test that uses the test bed appends its wall time to E2E_TIMES)
e2e-times:
	@if [ -s $(E2E_TIMES) ]; then \
	  echo "e2e: the 20 slowest of $$(wc -l < $(E2E_TIMES)) tests (seconds, package, test; all in $(E2E_TIMES)):"; \
	  sort -t "$$(printf '\t')" -k1,1nr $(E2E_TIMES) | head -20; \
	else echo "e2e: no test times in $(E2E_TIMES)"; fi

## soak: the e2e tests whose full size is too long for make test's budget, at that size (make test runs each leaner): issue 4's 200,000 row changes under SIGKILLs (TestDaemonKill9JoinsShardsScaleOut)
soak:
	E2E=1 E2E_JOIN_CHANGES=200000 E2E_FAILED_LOGS=$(CURDIR)/.e2e-failed-logs $(GO) test -count=1 -p 1 -timeout 60m -run '^TestDaemonKill9JoinsShardsScaleOut$$' ./e2e/

## e2e-kfake: the same suite on the in-process-protocol broker, for fast loops
e2e-kfake:
	E2E_BROKER=kfake $(GO) test -count=1 -p 1 -timeout $(E2E_TIMEOUT) $(E2E_PKGS)
	E2E_BROKER=kfake $(GO) -C bench test -count=1 -p 1 -timeout $(E2E_TIMEOUT) $(BENCH_E2E_PKGS)

## e2e-containers: the suite against Redpanda + MySQL 8.4 (needs a Docker engine)
e2e-containers:
	docker compose -f e2e/compose.yaml up -d --wait
	E2E_BROKER=external E2E_KAFKA_BROKERS=127.0.0.1:19092 \
	  E2E_MYSQL_DSN='root:readside@tcp(127.0.0.1:13306)/' \
	  $(GO) test -count=1 -p 1 -timeout $(E2E_TIMEOUT) $(E2E_PKGS) && \
	E2E_BROKER=external E2E_KAFKA_BROKERS=127.0.0.1:19092 \
	  E2E_MYSQL_DSN='root:readside@tcp(127.0.0.1:13306)/' \
	  $(GO) -C bench test -count=1 -p 1 -timeout $(E2E_TIMEOUT) $(BENCH_E2E_PKGS); \
	  rc=$$?; docker compose -f e2e/compose.yaml down -v; exit $$rc

## bench: every stage next to the machine's own limits in one run (docs/benchmarks.md); writes bench/results/latest.{json,md,png} (≤ 15 min)
bench:
	$(BENCHALL) -out bench/results $(BENCH_FLAGS)

## bench-quick: the same with smaller sizes and shorter latency steps (a few minutes; ~7 with every workload on a loaded 2-core box)
bench-quick:
	$(BENCHALL) -quick -quiet-wait 20s -out bench/results $(BENCH_FLAGS)

## bench-peers: Debezium (MariaDB source + JDBC sink, Kafka Connect standalone) next to readside on the same workloads; writes bench/results/peers.{json,md} (~10 min)
bench-peers:
	$(BENCHALL) -peers -out bench/results $(BENCH_FLAGS)

## bench-instructions: instructions per event of the hot paths (decoding, Build, encoding, statement text) under callgrind, repeatable on a noisy box (REF=<commit> adds another commit's counts)
bench-instructions:
	REF=$(REF) bash bench/instructions/run.sh

## demo: readside on its embedded broker against a private MariaDB, with live traffic (Ctrl-C stops all)
demo: build
	$(GO) build -o bin/readside-demo ./e2e/cmd/demo
	bin/readside-demo -readside $(BIN) $(DEMO_FLAGS)

## lint: go vet, gofmt and staticcheck (fetched through the module proxy on first use) over every module
# Go 1.26 code needs Staticcheck 2026.1 (v0.7) or later.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
LINT_MODULES ?= . bench e2e/vitessdiff deploy/helm/chartcheck
lint:
	@rc=0; for m in $(LINT_MODULES); do echo "lint: module $$m"; (cd $$m && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...) || rc=1; done; \
	out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; rc=1; fi; \
	exit $$rc

## testbed-up / testbed-down: a test bed for humans, left running in .testbed/
testbed-up:
	$(GO) run ./e2e/cmd/testbed up -dir .testbed

testbed-down:
	$(GO) run ./e2e/cmd/testbed down -dir .testbed

clean:
	rm -rf bin
