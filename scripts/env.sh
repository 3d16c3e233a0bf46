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
# Checked queries read their types from domain/.sqlx, not a database (scripts/sqlx-data.sh writes it).
export SQLX_OFFLINE=true
