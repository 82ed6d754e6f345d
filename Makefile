# Convenience targets; the README gives the plain commands too.
.PHONY: build test test-kafka-go fuzz image up down monitoring-image monitoring-up monitoring-down lint bench bench-failover bench-rolling bench-newtopic bench-go bench-reassign bench-scale secure-up secure-down chaos chaos-secure soak

build:
	go build -o bin/kbroker ./cmd/kbroker

test:
	go test ./...

# kafka-go's own test suite against a kbroker node on localhost:9092
# (PLAINTEXT) and :9093 (SASL_PLAINTEXT), which must be free
# (itest/kafkago_test.go; README, Test it).
test-kafka-go:
	KB_TEST_KAFKA_GO=all go test -count=1 -timeout 30m -run 'TestKafkaGoSuite$$' -v ./itest/

# Every fuzz target for FUZZTIME each, one after another (scripts/fuzz.sh).
FUZZTIME ?= 30s
fuzz:
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

# A static binary copied into a FROM scratch image (nothing is pulled).
image:
	mkdir -p deploy/build/data
	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o deploy/build/kbroker ./cmd/kbroker
	docker build -t kbroker:latest deploy

up: image
	docker compose -f deploy/docker-compose.yml up -d

down:
	docker compose -f deploy/docker-compose.yml down

# Prometheus beside the compose cluster (deploy/docker-compose.monitoring.yml):
# an image FROM scratch around the binary of Debian's prometheus package
# (apt-get install prometheus), with the shared libraries ldd lists for it
# and Debian's classic web UI (less moment-timezone's 200 MB of data
# files), scraping kb1..kb3:9100 with deploy/prometheus/kbroker-rules.yml.
PROMETHEUS_BIN ?= /usr/bin/prometheus
PROMETHEUS_BUILD = deploy/build/prometheus
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo 'docker compose' || echo docker-compose)
MONITORING = -f deploy/docker-compose.yml -f deploy/docker-compose.monitoring.yml

monitoring-image:
	@test -x $(PROMETHEUS_BIN) || { echo "$(PROMETHEUS_BIN) not found: apt-get install prometheus"; exit 1; }
	rm -rf $(PROMETHEUS_BUILD)
	mkdir -p $(PROMETHEUS_BUILD)/data $(PROMETHEUS_BUILD)/root/usr/share/prometheus
	cp $(PROMETHEUS_BIN) $(PROMETHEUS_BUILD)/prometheus
	for lib in $$(ldd $(PROMETHEUS_BIN) | grep -o '/[^ ]*'); do \
		mkdir -p $(PROMETHEUS_BUILD)/root$$(dirname $$lib) && cp -L $$lib $(PROMETHEUS_BUILD)/root$$lib || exit 1; \
	done
	if [ -d /usr/share/prometheus/web ]; then \
		tar -C /usr/share/prometheus -chf - --exclude=web/static/moment-timezone/data web | tar -C $(PROMETHEUS_BUILD)/root/usr/share/prometheus -xf -; \
	fi
	docker build -t kbroker-prometheus:latest -f deploy/prometheus/Dockerfile $(PROMETHEUS_BUILD)

monitoring-up: image monitoring-image
	$(COMPOSE) $(MONITORING) up -d

monitoring-down:
	$(COMPOSE) $(MONITORING) down

# The secure cluster (deploy/docker-compose.secure.yml). Its certificates,
# SCRAM credential and gossip key are made here, on the host, into
# deploy/secrets/ (gitignored) and mounted into the containers. They are
# made world-readable because the containers run as uid 65532 and bind
# mounts keep the host's owner: keep deploy/secrets on a private machine.
SECRETS = deploy/secrets

secure-up: image $(SECRETS)/tls/ca.pem $(SECRETS)/scram $(SECRETS)/gossip.key
	docker compose -f deploy/docker-compose.secure.yml up -d

secure-down:
	docker compose -f deploy/docker-compose.secure.yml down

$(SECRETS)/tls/ca.pem:
	go run ./cmd/kbroker tls init --dir $(SECRETS)/tls --hosts kb1,kb2,kb3 --san-localhost --client admin
	mv $(SECRETS)/tls/ca-key.pem $(SECRETS)/ca-key.pem   # the CA key stays on the host
	chmod a+r $(SECRETS)/tls/*

$(SECRETS)/scram:
	mkdir -p $(SECRETS)
	printf 'SCRAM-SHA-512=[name=admin,password=%s]\n' "$$(head -c 18 /dev/urandom | base64 | tr -d '/+=')" > $@
	chmod a+r $@

$(SECRETS)/gossip.key:
	mkdir -p $(SECRETS)
	head -c 32 /dev/urandom | base64 > $@
	chmod a+r $@

# The mixed-fault long run of the chaos harness (deploy/chaos/README.md)
# against the compose cluster: kills, SIGTERM bounces, pauses and network
# partitions for DURATION, then the safety checks and the per-nemesis
# client-visible ack gaps. CI runs the short subprocess pass instead
# (go test ./deploy/chaos/).
DURATION ?= 10m
chaos: image
	go run ./deploy/chaos --target compose --duration $(DURATION)

# The long mixed-fault soak (make soak DURATION=1h): three local
# subprocesses, each on a tmpfs of its own (root is needed to mount them),
# under every nemesis the subprocess target has: kills of a leader and of
# the controller, SIGTERM bounces, pauses past the session timeout,
# rolling restarts, clock jumps of one node's wall clock and disk-full (a
# node's disk filled until it stops, then freed and restarted); plain
# idempotent, transactional and EOS producers with consumer groups; then
# the safety checks. make soak TARGET=compose DURATION=1h runs the same
# against the compose cluster (image built first), which adds network
# partitions (isolate); the transactional producers are on there too.
TARGET ?= subprocess
soak: $(if $(filter compose,$(TARGET)),image)
	go run ./deploy/chaos --target $(TARGET) --nemeses all $(if $(filter compose,$(TARGET)),--txn-producers 2) --duration $(DURATION)

# The same run on three local subprocesses with SASL_SSL everywhere: TLS +
# SCRAM-SHA-512 for clients and between brokers, mutual TLS on the
# controller listener, the StandardAuthorizer, encrypted gossip. The CA,
# certificates, passwords and gossip key are generated in the run's work
# directory. The isolate nemesis needs compose and is skipped.
chaos-secure:
	go run ./deploy/chaos --target subprocess --security sasl_ssl --duration $(DURATION)

# golangci-lint v2 with .golangci.yml (static checks and the allowed-import
# rules of docs/ARCHITECTURE.md). The pinned version is installed with
# go install when it is missing or another version is there.
GOLANGCI_LINT_VERSION = v2.15.0
GOLANGCI_LINT = $(or $(shell go env GOBIN),$(shell go env GOPATH)/bin)/golangci-lint

lint:
	@$(GOLANGCI_LINT) version 2>/dev/null | grep -q ' $(GOLANGCI_LINT_VERSION:v%=%) ' || \
		go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	$(GOLANGCI_LINT) run ./...

# A local three-node kbroker cluster next to franz-go's in-memory kfake in
# the same run: throughput and latency ratios (machine load affects both).
# BENCH_FLAGS passes more flags, e.g. BENCH_FLAGS='--durable --rounds 3'.
bench: build
	./bin/kbroker bench $(BENCH_FLAGS)

# kill -9 each broker in turn under load: per kill, the longest ack gap of
# any partition and how long the group's committed offsets were unreadable.
bench-failover: build
	./bin/kbroker bench --mode failover $(BENCH_FLAGS)

# SIGTERM and restart each broker in turn under load (a rolling restart):
# per restart, time to exit, the longest time a partition had no leader,
# the longest ack gap, and the records the producer saw fail.
bench-rolling: build
	./bin/kbroker bench --mode rolling $(BENCH_FLAGS)

# Create --topics (15) new topics one after the other and write an acks=all
# record to every partition of each at once: per topic, the time from
# CreateTopics' answer to the last acknowledgement.
bench-newtopic: build
	./bin/kbroker bench --mode newtopic $(BENCH_FLAGS)

# A fourth broker joins and one replica of half the partitions of a
# preloaded topic (--preload-mb, 300 MB) moves onto it unthrottled, the
# other half with a --throttle-mb (10 MB/s) replication throttle, under a
# light acks=all producer: MB/s per move and the producer's p50/p99.
bench-reassign: build
	./bin/kbroker bench --mode reassign $(BENCH_FLAGS)

# The Go benchmarks of the hot paths (append, follower append, tail and
# follower reads, the high watermark round, purgatory completion, batch
# iteration, produce and consume through a node), 6 runs each with
# allocations, into bench-go.txt. BASE=<an earlier bench-go.txt> compares
# with benchstat: a change may not make one >10 % slower without saying why.
BENCH_GO = 'BenchmarkAppend$$|BenchmarkReadTail|BenchmarkRead$$|BenchmarkFollowerAppend|BenchmarkReadFollowerFetch|BenchmarkHighWatermarkAdvance|BenchmarkWatchThenCheck$$|BenchmarkIterate|BenchmarkProduce|BenchmarkConsume'
BENCHSTAT_VERSION = v0.0.0-20260908200009-22c9c6c9d4da
bench-go:
	go test -run '^$$' -bench $(BENCH_GO) -benchmem -count 6 ./storage ./replication ./purgatory ./wire/record ./cluster | tee bench-go.txt
	@if [ -n "$(BASE)" ]; then go run golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION) $(BASE) bench-go.txt; fi

# 1,000 and 10,000 partitions (RF 3) on a fresh local three-node cluster
# each: creation, idle CPU, RSS and descriptors per replica, restart and
# recovery, metadata propagation; with ratios to the 1,000 figures
# (docs/PERFORMANCE.md, Scale). E.g. BENCH_FLAGS='--scale-partitions 1000,5000'.
bench-scale: build
	./bin/kbroker bench --mode scale $(BENCH_FLAGS)
