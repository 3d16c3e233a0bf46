#!/usr/bin/env bash
# Builds what `make run` serves and `make test` tests, setting up what each part needs just before it
# and running the parts side by side: the server binary (cargo's dev profile, target/debug/paddock; with
# --tests also every test target) and the release site (scripts/site.sh, in target/front). On 2 cores
# neither build keeps both busy all the time (a big crate compiling alone, the links), so running them
# together finishes sooner than one after the other, and the downloads the server's build waits for
# (libtorch's wheel) go on while the site compiles.
#
#   1. scripts/setup.sh apt toolchain: Debian's packages (mold among them) and rustup's pieces; quick
#      when present, and everything below needs them.
#   2. beside the rest: scripts/setup.sh wasm-bindgen web, then scripts/site.sh. Its output goes to
#      target/site-build.log and is shown when it ends.
#   3. scripts/setup.sh torch (the wheel is our libtorch; torch-sys' build script reads it), then cargo.
#
# The workspace's crates are compiled by clippy's driver (scripts/env.sh), so the build lints them. With
# --tests (what `make test` runs) a lint or compiler warning in our crates fails the build: cargo replays
# a fresh crate's warnings, so an up-to-date tree still reports them. Without it (`make run`), warnings are
# shown and the build goes on: a newer toolchain's new lints must not keep anyone from trying Paddock.
#
# With PADDOCK_TIMES set to a file, the seconds each part took are appended to it (scripts/test.sh prints
# them).
#
# Usage: scripts/build.sh [--tests] -- CARGO_ARGS...
set -euo pipefail
cd "$(dirname "$0")/.."

tests=0
[ "${1:-}" = --tests ] && { tests=1; shift; }
[ "${1:-}" = -- ] && shift
mkdir -p target
site_log=target/site-build.log
say() { printf '\033[1m[build]\033[0m %s\n' "$*"; }
took() { [ -z "${PADDOCK_TIMES:-}" ] || echo "$1 $2 $3" >>"$PADDOCK_TIMES"; }
started=$(date +%s)

scripts/setup.sh apt toolchain

# A session of its own, so that its whole process group (cargo, rustc, npm) can be stopped with this script.
site_started=$(date +%s)
setsid bash -c 'start=$(date +%s)
  scripts/setup.sh wasm-bindgen web && scripts/site.sh; rc=$?
  echo "site took $(( $(date +%s) - start )) s"; exit $rc' >"$site_log" 2>&1 &
site=$!
trap 'kill -- -$site 2>/dev/null || true' EXIT

scripts/setup.sh torch
# Now that the wheel and clippy are in place: LIBTORCH and the compiler wrapper.
source scripts/env.sh
server_started=$(date +%s)
took "setup (packages, toolchain, torch)" "$started" "$server_started"
if [ $tests = 0 ]; then
  cargo build "$@"
else
  cargo_log=target/cargo-build.log
  # The binary first, timed on its own: what `make run` waits for.
  # --timings: each crate's compile time and what ran beside it, in target/cargo-timings/ (the budget
  # is watched; this says where it went).
  { cargo build --timings "$@" && took "lints+build: the binary make run serves" "$server_started" "$(date +%s)" &&
    cargo test --no-run --timings "$@"; } 2>&1 | tee "$cargo_log"
  # cargo's summary line for a crate with warnings, e.g. "warning: `server` (lib test) generated 2 warnings".
  warned=$(grep -cE '^warning: .+ generated [0-9]+ warnings?' "$cargo_log" || true)
  if [ "$warned" -gt 0 ]; then
    say "lints: $warned of our crates' targets have warnings (above; \`make clippy\` lists them alone): fix them"
    exit 1
  fi
fi
took "lints+build: the binary and every test target" "$server_started" "$(date +%s)"

site_rc=0
wait "$site" || site_rc=$?
trap - EXIT
cat "$site_log"
site_took=$(awk '/^site took [0-9]+ s$/ {print $3}' "$site_log")
took "site (beside the server's build)" "$site_started" "$((site_started + ${site_took:-0}))"
[ $site_rc = 0 ] || { say "the site build failed (above)"; exit 1; }
