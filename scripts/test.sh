#!/usr/bin/env bash
# `make test`'s runner, from a bare machine to one summary line, with the parts that wait on the network
# running beside the parts that keep the CPU busy:
#   1. setup: Debian's packages and rustup's pieces (scripts/setup.sh apt toolchain), then the format
#      check (cargo fmt --check).
#   2. beside the build: what only the tests need: the PaddleNLP and schemathesis venvs, Chromium, the
#      browser tests' npm packages, the Docker engine (scripts/docker.sh), the Slurm test cluster
#      (scripts/slurm.sh) and the LDAP directory of the company sign-in tests (scripts/ldap.sh). Output in target/test-logs/services.log.
#   3. lints+build: scripts/build.sh --tests (libtorch's wheel, then the server and every test target
#      compiled once, by clippy's driver, warnings denied; the site building beside them), run by
#      scripts/sqlx-data.sh --check so that the checked queries' data is compared with the migrations
#      in the same compile.
#   4. every Rust test binary, then every browser spec, each suite run to the end even when something
#      fails (one failing test binary must not hide the others' results).
# The last lines give each step's start and length, then one summary line of passed/failed counts across
# both suites. The exit status fails on any failure, on unformatted code, on a lint, on stale query data,
# on a setup that failed, and on a suite that could not run at all. Each step's whole output is kept
# under target/test-logs/.
#
# Usage: scripts/test.sh PADDOCK_BIN SITE_ROOT -- CARGO_TEST_ARGS...
set -uo pipefail
cd "$(dirname "$0")/.."

bin=$1 site=$2
shift 2
[ "${1:-}" = -- ] && shift
logs=target/test-logs
mkdir -p "$logs"

say() { printf '\033[1m[test]\033[0m %s\n' "$*"; }

# Each step's name, start and end (seconds since the epoch), one per line; scripts/build.sh adds its own
# (given the file for the build alone: the browser spec that runs `make run` builds again).
times=$PWD/$logs/times
: >"$times"
t0=$(date +%s)
took() { echo "$1 $2 $(date +%s)" >>"$times"; }

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
say "setup: Debian's packages and rustup's pieces (scripts/setup.sh apt toolchain)"
scripts/setup.sh apt toolchain 2>&1 | tee "$logs/setup.log"
setup_rc=${PIPESTATUS[0]}
source scripts/env.sh
disk "at start"

say "format: cargo fmt --all --check"
cargo fmt --all --check >"$logs/fmt.log" 2>&1
fmt_rc=$?
[ "$fmt_rc" -eq 0 ] || say "format: files differ from rustfmt's layout (see $logs/fmt.log; \`cargo fmt --all\` fixes them)"
took "setup (packages, toolchain), format check" "$t0"

# What only the tests need, fetched and started while the build compiles. Every piece is idempotent;
# the fuzz has a venv of its own, so it installs while the build's torch does.
services_started=$(date +%s)
setsid bash -c 'scripts/setup.sh paddle fuzz browser e2e && REQUIRE_DOCKER=1 scripts/docker.sh && scripts/slurm.sh && scripts/ldap.sh' \
  >"$logs/services.log" 2>&1 </dev/null &
services=$!
trap 'kill -- -$services 2>/dev/null || true' EXIT

# One compilation for the lints, the build and the queries: clippy's driver compiles our crates
# (scripts/env.sh), and the domain's query macros check each query against a database migrated from
# migrations/ and write what they found, which must be domain/.sqlx.
say "lints+build: the server and every test target, warnings denied, queries checked; the site beside them (scripts/build.sh --tests)"
PADDOCK_TIMES=$times scripts/sqlx-data.sh --check -- scripts/build.sh --tests -- "$@" 2>&1 | tee "$logs/build.log"
build_rc=${PIPESTATUS[0]}
[ "$build_rc" -eq 0 ] || say "lints+build failed: a compile error, a warning in our crates, or stale domain/.sqlx (see $logs/build.log)"

say "the test services (venvs, Chromium, Docker, Slurm, LDAP; all of it in $logs/services.log):"
services_rc=0
wait "$services" || services_rc=$?
trap - EXIT
took "test services (beside the build)" "$services_started"
tail -4 "$logs/services.log"
[ "$services_rc" -eq 0 ] || say "the test services could not be set up (see $logs/services.log)"
source scripts/env.sh

disk "after the build"
[ "$(free_gb)" -ge "$RUNTIME_IMAGE_GB" ] || say "warning: $(free_gb) GB free is less than the ${RUNTIME_IMAGE_GB} GB the environment image with the runtime needs while it is built: the tests that run jobs in containers will fail with \"no space left on device\""
say "Rust: cargo test --no-fail-fast $*"
rust_started=$(date +%s)
cargo test --no-fail-fast "$@" 2>&1 | tee "$logs/rust.log"
rust_rc=${PIPESTATUS[0]}
took "Rust tests" "$rust_started"
read -r rust_pass rust_fail rust_ignored < <(rust_counts "$logs/rust.log")

disk "after the Rust tests"
if [ -x "$bin" ] && [ -f "$site/pkg/paddock.wasm" ]; then
  say "browser: node --test e2e/specs (PADDOCK_BIN=$bin, site $site)"
  e2e_started=$(date +%s)
  (cd e2e && PADDOCK_BIN="$PWD/../$bin" PADDOCK_SITE_ROOT="$PWD/../$site" npm test --silent) 2>&1 | tee "$logs/e2e.log"
  e2e_rc=${PIPESTATUS[0]}
  took "browser tests" "$e2e_started"
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
# The time budget, watched: each step's start (from the beginning of `make test`) and length. Steps that
# ran beside another overlap; the total is what a user waits.
say "time: each step's start and length (min:s), and the whole"
awk -v t0="$t0" 'function mmss(s) { return sprintf("%d:%02d", s / 60, s % 60) }
  { name = $1; for (i = 2; i <= NF - 2; i++) name = name " " $i
    printf "%s\t   %-46s from %6s  took %6s\n", $(NF-1), name, mmss($(NF-1) - t0), mmss($NF - $(NF-1)) }' "$times" |
  sort -n -k1,1 | cut -f2-
total=$(( $(date +%s) - t0 ))
say "time: $(printf '%d:%02d' $((total / 60)) $((total % 60))) from setup to this line"
failed=$((rust_fail + e2e_fail))
notes=()
# A suite that exits non-zero without a failed test did not run to the end (a test binary that did not
# build, a crash, a spec file that threw while loading): still a failure.
[ "$setup_rc" -ne 0 ] && notes+=("the setup failed: see $logs/setup.log")
[ "$services_rc" -ne 0 ] && notes+=("the test services could not be set up: see $logs/services.log")
[ "$fmt_rc" -ne 0 ] && notes+=("the code is not formatted: see $logs/fmt.log")
[ "$build_rc" -ne 0 ] && notes+=("lints+build failed (a compile error, a warning in our crates, or stale domain/.sqlx): see $logs/build.log")
[ "$rust_rc" -ne 0 ] && [ "$rust_fail" -eq 0 ] && notes+=("cargo test exited $rust_rc: see $logs/rust.log")
[ "$e2e_rc" -ne 0 ] && [ "$e2e_fail" -eq 0 ] && notes+=("the browser suite exited $e2e_rc: see $logs/e2e.log")
summary="make test: $((rust_pass + e2e_pass)) passed, $failed failed (Rust $rust_pass passed, $rust_fail failed, $rust_ignored ignored; browser $e2e_pass passed, $e2e_fail failed)"
[ ${#notes[@]} -eq 0 ] || summary+="; $(IFS=';'; echo "${notes[*]}")"
echo
say "$summary"
[ "$failed" -eq 0 ] && [ "$setup_rc" -eq 0 ] && [ "$services_rc" -eq 0 ] && [ "$fmt_rc" -eq 0 ] && [ "$build_rc" -eq 0 ] && [ "$rust_rc" -eq 0 ] && [ "$e2e_rc" -eq 0 ]
