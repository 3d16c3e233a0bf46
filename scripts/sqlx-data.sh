#!/usr/bin/env bash
# The domain's compile-time-checked queries (`sqlx::query!`, `query_as!`) are checked against the schema
# the migrations make. Builds read what each query returns from domain/.sqlx (committed), so building
# needs no database; this script writes that data from a fresh database migrated from migrations/, and
# with --check fails when the committed data is not what the queries and migrations give now (a query
# or a migration changed without it). `make test` runs the check inside its build, which compiles the
# domain anyway: after `--`, the command that compiles it (default `cargo check -p domain --all-targets`),
# run with the database's address in its environment.
#
# Usage: scripts/sqlx-data.sh                        rewrite domain/.sqlx
#        scripts/sqlx-data.sh --check [-- COMMAND...]  compare, change nothing
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

check=false
[ "${1:-}" = --check ] && { check=true; shift; }
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || set -- cargo check -p domain --all-targets --quiet

db="$PWD/target/sqlx/schema.db"
mkdir -p "$(dirname "$db")"
rm -f "$db"
# The migrations in order, as `sqlx::migrate!` applies them (each file is plain SQL).
python3 - "$db" migrations <<'PY'
import pathlib, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for migration in sorted(pathlib.Path(sys.argv[2]).glob("*.sql")):
    db.executescript(migration.read_text())
db.commit()
PY

committed="$PWD/domain/.sqlx"
if $check; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
else
  out="$committed"
  rm -rf "$out"
  mkdir -p "$out"
fi
# The macros write their data while they expand, so the crate is compiled again, online.
touch domain/src/lib.rs
DATABASE_URL="sqlite://$db" SQLX_OFFLINE=false SQLX_OFFLINE_DIR="$out" "$@"

if $check; then
  if ! diff -r "$committed" "$out" >/dev/null 2>&1; then
    echo "domain/.sqlx is not what the checked queries and the migrations give now; run scripts/sqlx-data.sh and commit it" >&2
    diff -r "$committed" "$out" | head -20 >&2 || true
    exit 1
  fi
  echo "domain/.sqlx is current ($(ls "$out" | wc -l) queries)"
else
  echo "wrote domain/.sqlx ($(ls "$out" | wc -l) queries)"
fi
