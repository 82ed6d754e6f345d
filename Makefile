# Convenience targets; the README gives the plain commands too.
.PHONY: build test fuzz image up down

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
