#!/usr/bin/env bash
# `make test`'s runner: the format check (cargo fmt --check), the lints (cargo clippy, warnings denied)
# with the checked queries' data against the migrations (scripts/sqlx-data.sh --check), the build
# (scripts/build.sh --tests), then every Rust test binary, then every browser spec, each suite run to
# the end even when something fails (one failing test binary must not hide the others' results), and
# one summary line of passed/failed counts across both. The exit status fails on any failure, on
# unformatted code, on a lint, on stale query data, and on a suite that could not run at all. Each
# step's whole output is kept under target/test-logs/.
#
# Usage: scripts/test.sh PADDOCK_BIN SITE_ROOT -- CARGO_TEST_ARGS...
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

bin=$1 site=$2
shift 2
[ "${1:-}" = -- ] && shift
logs=target/test-logs
mkdir -p "$logs"

say() { printf '\033[1m[test]\033[0m %s\n' "$*"; }

# Sums the counts of libtest's `test result:` lines (unit, integration and doc tests).
rust_counts() {
  awk '/^test result:/ {
         for (i = 1; i <= NF; i++) {
           if ($(i + 1) ~ /^passed/) p += $i
           if ($(i + 1) ~ /^failed/) f += $i
           if ($(i + 1) ~ /^ignored/) g += $i
         }
       }
       END { printf "%d %d %d\n", p, f, g }' "$1"
}

# The totals node's test runner prints at the end: `# pass N` (TAP, when piped) or `ℹ pass N` (spec).
node_counts() {
  awk '/^(# |ℹ )pass [0-9]+$/ { p = $NF } /^(# |ℹ )fail [0-9]+$/ { f = $NF } END { printf "%d %d\n", p, f }' "$1"
}

# Disk, said at each step: a machine short of it fails in odd places (an image build's "no space left on
# device", a server that cannot write its database), and a CI log should say so where one looks first.
# The API tests build one environment image with the Paddock runtime: about 4 GB in Docker, plus the layer
# being copied while it is built.
RUNTIME_IMAGE_GB=5
free_gb() { df -Pk . | awk 'NR==2 {print int($4 / 1048576)}'; }
disk() {
  local target images
  target=$(du -sk target 2>/dev/null | awk '{printf "%.1f GB", $1 / 1048576}')
  images=$(docker system df --format '{{.Type}}: {{.Size}}' 2>/dev/null | paste -sd ' ' -)
  say "disk $1: $(free_gb) GB free; target/ $target; Docker ${images:-not answering}"
}
disk "at start"

say "format: cargo fmt --all --check"
cargo fmt --all --check >"$logs/fmt.log" 2>&1
fmt_rc=$?
[ "$fmt_rc" -eq 0 ] || say "format: files differ from rustfmt's layout (see $logs/fmt.log; \`cargo fmt --all\` fixes them)"

# One compilation for both: clippy compiles the domain, and its query macros check each query against
# a database migrated from migrations/ and write what they found, which must be domain/.sqlx.
say "lints and queries: cargo clippy --all-targets -- -D warnings, checked queries against the migrations"
scripts/sqlx-data.sh --check -- clippy "$@" --all-targets -- -D warnings >"$logs/clippy.log" 2>&1
clippy_rc=$?
[ "$clippy_rc" -eq 0 ] || say "lints and queries: clippy found problems, or domain/.sqlx is stale (see $logs/clippy.log)"

say "build: the server, every test target and the site (scripts/build.sh --tests)"
scripts/build.sh --tests -- "$@" 2>&1 | tee "$logs/build.log"
build_rc=${PIPESTATUS[0]}

disk "after the build"
[ "$(free_gb)" -ge "$RUNTIME_IMAGE_GB" ] || say "warning: $(free_gb) GB free is less than the ${RUNTIME_IMAGE_GB} GB the environment image with the runtime needs while it is built: the tests that run jobs in containers will fail with \"no space left on device\""
say "Rust: cargo test --no-fail-fast $*"
cargo test --no-fail-fast "$@" 2>&1 | tee "$logs/rust.log"
rust_rc=${PIPESTATUS[0]}
read -r rust_pass rust_fail rust_ignored < <(rust_counts "$logs/rust.log")

disk "after the Rust tests"
if [ -x "$bin" ] && [ -f "$site/pkg/paddock.wasm" ]; then
  say "browser: node --test e2e/specs (PADDOCK_BIN=$bin, site $site)"
  (cd e2e && PADDOCK_BIN="$PWD/../$bin" PADDOCK_SITE_ROOT="$PWD/../$site" npm test --silent) 2>&1 | tee "$logs/e2e.log"
  e2e_rc=${PIPESTATUS[0]}
else
  say "browser: cannot run: $bin or $site/pkg/paddock.wasm is missing"
  : >"$logs/e2e.log"
  e2e_rc=1
fi
read -r e2e_pass e2e_fail < <(node_counts "$logs/e2e.log")

# A failed Rust test's own words are far up in the log, beyond what a CI page shows of its end: the last
# lines of each, repeated here, under the test's name.
if [ "$rust_fail" -gt 0 ]; then
  say "the failed Rust tests' output (the last 60 lines of each; all of it in $logs/rust.log)"
  awk 'name != "" && (/^failures:$/ || /^---- /) { flush(); name = "" }
       /^---- .* stdout ----$/ { name = $2; n = 0; next }
       name != "" { lines[n++] = $0 }
       function flush(  i, from) { from = n > 60 ? n - 60 : 0; print "> " name; for (i = from; i < n; i++) print "    " lines[i] }
       END { if (name != "") flush() }' "$logs/rust.log"
fi

disk "at the end"
failed=$((rust_fail + e2e_fail))
notes=()
# A suite that exits non-zero without a failed test did not run to the end (a test binary that did not
# build, a crash, a spec file that threw while loading): still a failure.
[ "$fmt_rc" -ne 0 ] && notes+=("the code is not formatted: see $logs/fmt.log")
[ "$clippy_rc" -ne 0 ] && notes+=("clippy found problems or domain/.sqlx is stale: see $logs/clippy.log")
[ "$build_rc" -ne 0 ] && notes+=("the build failed: see $logs/build.log")
[ "$rust_rc" -ne 0 ] && [ "$rust_fail" -eq 0 ] && notes+=("cargo test exited $rust_rc: see $logs/rust.log")
[ "$e2e_rc" -ne 0 ] && [ "$e2e_fail" -eq 0 ] && notes+=("the browser suite exited $e2e_rc: see $logs/e2e.log")
summary="make test: $((rust_pass + e2e_pass)) passed, $failed failed (Rust $rust_pass passed, $rust_fail failed, $rust_ignored ignored; browser $e2e_pass passed, $e2e_fail failed)"
[ ${#notes[@]} -eq 0 ] || summary+="; $(IFS=';'; echo "${notes[*]}")"
echo
say "$summary"
[ "$failed" -eq 0 ] && [ "$fmt_rc" -eq 0 ] && [ "$clippy_rc" -eq 0 ] && [ "$build_rc" -eq 0 ] && [ "$rust_rc" -eq 0 ] && [ "$e2e_rc" -eq 0 ]
