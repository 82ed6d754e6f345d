# Convenience targets; the README gives the plain commands too.
.PHONY: build test fuzz image up down lint chaos

build:
	go build -o bin/kbroker ./cmd/kbroker

test:
	go test ./...

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

# The mixed-fault long run of the chaos harness (deploy/chaos/README.md)
# against the compose cluster: kills, SIGTERM bounces, pauses and network
# partitions for DURATION, then the safety checks and the per-nemesis
# client-visible ack gaps. CI runs the short subprocess pass instead
# (go test ./deploy/chaos/).
DURATION ?= 10m
chaos: image
	go run ./deploy/chaos --target compose --duration $(DURATION)

# golangci-lint v2 with .golangci.yml (static checks and the allowed-import
# rules of docs/ARCHITECTURE.md). The pinned version is installed with
# go install when it is missing or another version is there.
GOLANGCI_LINT_VERSION = v2.15.0
GOLANGCI_LINT = $(or $(shell go env GOBIN),$(shell go env GOPATH)/bin)/golangci-lint

lint:
	@$(GOLANGCI_LINT) version 2>/dev/null | grep -q ' $(GOLANGCI_LINT_VERSION:v%=%) ' || \
		go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	$(GOLANGCI_LINT) run ./...
