# Sourced by the Makefile's recipes and by developers' shells: where the project's tools live.
# Idempotent and quiet; it only sets variables.
_paddock_root="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)"
export PADDOCK_ROOT="$_paddock_root"
export PATH="$HOME/.cargo/bin:$_paddock_root/.venv/bin:$PATH"
# libtorch comes from the torch wheel in the project venv (see scripts/setup.sh); tch links against it
# and our build scripts give the binaries an rpath to its lib/ directory.
for _t in "$_paddock_root"/.venv/lib/python3*/site-packages/torch; do
  [ -d "$_t/lib" ] && export LIBTORCH="$_t"
done
unset _t _paddock_root
# The workspace's own crates are compiled by clippy's driver, which lints them in the same pass that
# compiles them (dependencies go to plain rustc): `make test` gets its lints from the build it does
# anyway instead of a second, check-only compile of the whole tree, and every recipe sees the same
# compiler for our crates, so `make run` after `make test` compiles nothing again. Lints are warnings
# here; scripts/build.sh --tests fails on any. Set only where rustup has clippy (scripts/setup.sh adds it).
if _driver=$(rustup which clippy-driver 2>/dev/null) && [ -x "$_driver" ]; then
  export RUSTC_WORKSPACE_WRAPPER="$_driver"
fi
unset _driver
# Checked queries read their types from domain/.sqlx, not a database (scripts/sqlx-data.sh writes it).
export SQLX_OFFLINE=${SQLX_OFFLINE:-true}
