#!/usr/bin/env bash
# Idempotent machine setup for Paddock: installs what building, running and testing need, skipping every
# piece that is already present, and says what it does. Called by `make setup`, and piece by piece by
# scripts/build.sh (`make run`) and scripts/test.sh (`make test`), which start compiling as soon as what
# the compile needs is here and fetch the rest beside it. Pieces:
#   apt       Debian packages for building and running: docker.io (environments), busybox-static (the
#             shell of the locally built base image), pkg-config, mold (the linker, scripts/mold-gcc).
#   browser   Debian packages for the browser tests: chromium + chromium-driver + fonts-noto-cjk
#             (their screenshots of Chinese text).
#   toolchain rustup's wasm32 target, rustfmt (`make test` checks the layout) and clippy (its driver
#             compiles the workspace's crates: scripts/env.sh).
#   wasm-bindgen  wasm-bindgen-cli at exactly the version in Cargo.lock (no cargo-leptos: scripts/site.sh
#             builds the site with the same steps, see there). Compiles: CPU, not network.
#   torch     a project venv (.venv) holding the PyPI torch wheel that tch expects: it is our libtorch.
#   fuzz      schemathesis in a venv of its own (.venv-fuzz): the schema-driven fuzz of the REST API in
#             `make test` (server/tests/api/fuzz.rs). Apart from .venv so that it installs while torch
#             does, and its pins never move what our libtorch's venv holds.
#   paddle    a second venv (.venv-paddle) with the pinned PaddleNLP that the PaddleNLP import/export tests
#             compare against (trainer/tests/paddle.rs, scripts/paddle/fixtures.py); apart from .venv
#             because paddlenlp 2.8.1 needs older pins of its own dependencies.
#   web       web/node_modules from its package-lock.json: the site's build tools (lightningcss and
#             esbuild: scripts/site.sh), xterm.js copied to public/vendor/xterm/ for the
#             browser terminal and uPlot to public/vendor/uplot/ for the job charts.
#   e2e       e2e/node_modules from its package-lock.json (the browser tests' driver).
#   rust = toolchain wasm-bindgen; node = web e2e (the names of earlier versions).
# Usage: scripts/setup.sh [piece ...]   (default: all pieces)
# With every piece, `wasm-bindgen` (CPU) runs beside the others (downloads), and its output is shown when
# it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

TORCH_VERSION=2.13.0          # the libtorch version tch 0.26 is built against
SCHEMATHESIS_VERSION=4.32.5   # pinned: a new release brings new checks, and so new failures, on its own
# Pinned too, for the same reason: schemathesis allows any newer hypothesis.
HYPOTHESIS_VERSION=6.170.27
# PaddleNLP 2.8.1 imports only with these older pins of its dependencies (checked on Debian 12, CPU).
PADDLE_PINS=(paddlepaddle==3.3.1 paddlenlp==2.8.1 "huggingface_hub<0.26" aistudio-sdk==0.2.1 "datasets<3" "pyarrow<17")

say()  { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }

export PATH="$HOME/.cargo/bin:$PATH"

setup_apt() { apt_install docker.io busybox-static pkg-config mold; }
setup_browser() { apt_install chromium chromium-driver fonts-noto-cjk; }

# Installs the Debian packages named that are not installed yet.
apt_install() {
  local want=("$@") missing=()
  for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then say "apt: ${want[*]} present"; return; fi
  if [ "$(id -u)" -ne 0 ] && ! have sudo; then
    say "apt: missing ${missing[*]} and not root: install them yourself"; return 1
  fi
  local SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  say "apt: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

setup_rust() { setup_toolchain; setup_wasm-bindgen; }

setup_toolchain() {
  if rustup target list --installed | grep -q '^wasm32-unknown-unknown$'; then
    say "rust: wasm32-unknown-unknown target present"
  else
    say "rust: adding the wasm32-unknown-unknown target"; rustup target add wasm32-unknown-unknown
  fi
  # `make test` checks the layout with rustfmt; clippy's driver compiles (and so lints) our crates.
  for component in rustfmt clippy; do
    rustup component list --installed | grep -q "^$component" || { say "rust: adding $component"; rustup component add "$component"; }
  done
}

setup_wasm-bindgen() {
  # The CLI must match the wasm-bindgen in Cargo.lock exactly (the generated glue and the library agree).
  local wbg
  wbg=$(awk '/^name = "wasm-bindgen"$/ {getline; gsub(/"/, "", $3); print $3; exit}' Cargo.lock)
  if have wasm-bindgen && wasm-bindgen --version | grep -q " $wbg\$"; then
    say "rust: wasm-bindgen-cli $wbg present"
  else
    # Not --locked: one of its locked dependencies is not served by the registry.
    say "rust: installing wasm-bindgen-cli $wbg (matches Cargo.lock; about 3 minutes on 2 cores, once)"
    # A tool, not our code: not through clippy's driver, which scripts/env.sh may have set.
    env -u RUSTC_WORKSPACE_WRAPPER cargo install --quiet --force wasm-bindgen-cli --version "$wbg"
  fi
}

setup_torch() {
  if [ -f .venv/.torch-$TORCH_VERSION ]; then say "torch: $TORCH_VERSION present in .venv"; return; fi
  [ -x .venv/bin/python ] || { say "torch: creating .venv"; python3 -m venv .venv; }
  # The wheel and its nvidia-* dependencies take about 4 GB installed. pip's temporary files go to the
  # project's own disk (a small tmpfs /tmp cannot hold them) and its cache is off (it would keep a second
  # copy of every wheel). pip resolves the whole set first without installing it; each package is then
  # installed on its own, so the peak is the installed size plus one wheel rather than plus all of them.
  local tmp=.venv/.pip-tmp free_gb
  mkdir -p "$tmp"
  free_gb=$(df -Pk .venv | awk 'NR==2 {print int($4 / 1048576)}')
  if [ "$free_gb" -lt 6 ]; then
    say "torch: only ${free_gb} GB free on $(df -P .venv | awk 'NR==2 {print $6}'); torch needs about 6 GB while installing"
    return 1
  fi
  local pip=(env TMPDIR="$PWD/$tmp" .venv/bin/pip --disable-pip-version-check --no-cache-dir)
  say "torch: resolving torch==$TORCH_VERSION and its dependencies"
  "${pip[@]}" install --quiet --dry-run --ignore-installed --report "$tmp/plan.json" "torch==$TORCH_VERSION"
  local pkg
  # torch last: everything it loads is in place before it is.
  for pkg in $(.venv/bin/python -c '
import json, sys
plan = [(i["metadata"]["name"], i["metadata"]["version"]) for i in json.load(open(sys.argv[1]))["install"]]
plan.sort(key=lambda p: p[0].lower() == "torch")
print(" ".join(f"{n}=={v}" for n, v in plan))' "$tmp/plan.json"); do
    say "torch: installing $pkg"
    "${pip[@]}" install --quiet --no-deps "$pkg"
  done
  rm -rf "$tmp"
  .venv/bin/python - <<'PY'
import torch, os
lib = os.path.join(os.path.dirname(torch.__file__), "lib")
assert os.path.exists(os.path.join(lib, "libtorch_cpu.so")), lib
print("[setup] torch:", torch.__version__, "at", lib)
PY
  touch .venv/.torch-$TORCH_VERSION
}

setup_fuzz() {
  local marker=.venv-fuzz/.schemathesis-$SCHEMATHESIS_VERSION-hypothesis-$HYPOTHESIS_VERSION
  if [ -f "$marker" ]; then say "fuzz: schemathesis $SCHEMATHESIS_VERSION (hypothesis $HYPOTHESIS_VERSION) present in .venv-fuzz"; return; fi
  [ -x .venv-fuzz/bin/python ] || { say "fuzz: creating .venv-fuzz"; python3 -m venv .venv-fuzz; }
  say "fuzz: installing schemathesis==$SCHEMATHESIS_VERSION hypothesis==$HYPOTHESIS_VERSION"
  .venv-fuzz/bin/pip --disable-pip-version-check --no-cache-dir install --quiet \
    "schemathesis==$SCHEMATHESIS_VERSION" "hypothesis==$HYPOTHESIS_VERSION"
  .venv-fuzz/bin/schemathesis --version
  touch "$marker"
}

setup_paddle() {
  local stamp
  stamp=.venv-paddle/.pins-$(printf '%s\n' "${PADDLE_PINS[@]}" | sha256sum | cut -c1-12)
  if [ -f "$stamp" ]; then say "paddle: ${PADDLE_PINS[*]:0:2} present in .venv-paddle"; return; fi
  [ -x .venv-paddle/bin/python ] || { say "paddle: creating .venv-paddle"; python3 -m venv .venv-paddle; }
  say "paddle: installing ${PADDLE_PINS[*]} (about 2 minutes)"
  local tmp=.venv-paddle/.pip-tmp
  mkdir -p "$tmp"
  TMPDIR="$PWD/$tmp" .venv-paddle/bin/pip --disable-pip-version-check --no-cache-dir install --quiet "${PADDLE_PINS[@]}"
  rm -rf "$tmp"
  .venv-paddle/bin/python -c 'import warnings; warnings.filterwarnings("ignore"); import paddle, paddlenlp; print("[setup] paddle:", paddle.__version__, "paddlenlp:", paddlenlp.__version__)' 2>/dev/null
  touch "$stamp"
}

# `npm ci` in one package directory, skipped when its node_modules is newer than its lock file.
npm_ci_in() {
  local dir=$1
  [ -f "$dir/package.json" ] || { say "node: no $dir/package.json yet"; return; }
  if [ -d "$dir/node_modules" ] && [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
    say "node: $dir/node_modules up to date"; return
  fi
  say "node: npm ci in $dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
}

setup_node() { setup_web; setup_e2e; }
setup_e2e() { npm_ci_in e2e; }

setup_web() {
  npm_ci_in web
  # The terminal's xterm.js, served from the site's own assets: cargo-leptos copies public/ (this copy
  # is git-ignored) into target/site. Only the browser builds and the stylesheet are needed.
  local xterm=web/node_modules/@xterm uplot=web/node_modules/uplot/dist
  vendor_copy public/vendor/xterm "$xterm/xterm/lib/xterm.js" "$xterm/xterm/css/xterm.css" "$xterm/addon-fit/lib/addon-fit.js"
  # The job charts' uPlot: its browser build (a global `uPlot`) and stylesheet.
  vendor_copy public/vendor/uplot "$uplot/uPlot.iife.min.js" "$uplot/uPlot.min.css"
}

# Copies files into a public/vendor/ folder when missing or older than the npm package's copy.
vendor_copy() {
  local vendor=$1 file; shift
  mkdir -p "$vendor"
  for file in "$@"; do
    [ -f "$file" ] || { say "node: $file is missing (npm ci in web/ first)"; return 0; }
    if [ ! -f "$vendor/$(basename "$file")" ] || [ "$file" -nt "$vendor/$(basename "$file")" ]; then
      cp "$file" "$vendor/"
      say "node: copied $(basename "$file") to $vendor/"
    fi
  done
}

if [ $# -gt 0 ]; then
  for p in "$@"; do "setup_$p"; done
  exit 0
fi
# Disk first: a fresh machine needs about 15 GB free for everything below and `make test` after it
# (measured on a clean clone: the Python venvs 7 GB, the build 4.5 GB, the environment image with the
# Paddock runtime that the API tests build 4 GB; a first run also fills cargo's and npm's caches). Short
# of it, the failure comes much later, as "no space left on device" in an image build or a database write.
NEED_GB=15
free_gb=$(df -Pk . | awk 'NR==2 {print int($4 / 1048576)}')
if [ -f .venv/.torch-$TORCH_VERSION ] || [ "$free_gb" -ge "$NEED_GB" ]; then
  say "disk: ${free_gb} GB free"
else
  say "warning: ${free_gb} GB free on $(df -P . | awk 'NR==2 {print $6}'); a fresh machine needs about ${NEED_GB} GB for setup and make test"
fi
# Everything: wasm-bindgen-cli compiles while the others download.
setup_toolchain
rust_log=$(mktemp)
setup_wasm-bindgen >"$rust_log" 2>&1 &
rust_pid=$!
# If another piece fails, the compile beside it stops too (the subshell and its cargo).
trap 'pkill -P "$rust_pid" 2>/dev/null; kill "$rust_pid" 2>/dev/null; cat "$rust_log"; rm -f "$rust_log"' EXIT
for p in apt browser torch fuzz paddle web e2e; do "setup_$p"; done
trap - EXIT
if wait "$rust_pid"; then cat "$rust_log"; rm -f "$rust_log"; else
  cat "$rust_log"; rm -f "$rust_log"; say "wasm-bindgen: failed (above)"; exit 1
fi
