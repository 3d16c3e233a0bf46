#!/usr/bin/env bash
# Builds what `make run` serves and `make test` tests, the two builds side by side: the server binary
# (cargo's dev profile, target/debug/paddock; with --tests also every test target) and the release site
# (scripts/site.sh, in target/front). On 2 cores neither build keeps both busy all the time (a big crate
# compiling alone, the links), so running them together finishes sooner than one after the other. The
# site's output goes to target/site-build.log and is shown when it ends.
#
# Usage: scripts/build.sh [--tests] -- CARGO_ARGS...
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

tests=0
[ "${1:-}" = --tests ] && { tests=1; shift; }
[ "${1:-}" = -- ] && shift
mkdir -p target
site_log=target/site-build.log

# A session of its own, so that its whole process group (cargo, rustc) can be stopped with this script.
setsid scripts/site.sh >"$site_log" 2>&1 &
site=$!
trap 'kill -- -$site 2>/dev/null || true' EXIT

cargo build "$@"
[ $tests = 0 ] || cargo test --no-run "$@"

site_rc=0
wait "$site" || site_rc=$?
trap - EXIT
cat "$site_log"
[ $site_rc = 0 ] || { printf '\033[1m[build]\033[0m the site build failed (above)\n'; exit 1; }
