#!/usr/bin/env bash
# Builds the hydrated site that `paddock serve` serves (target/site): the wasm bundle, its JS glue, the
# stylesheet and the static assets. This is what `cargo leptos build` does for this project, step for step,
# without cargo-leptos itself: installing it compiles ~700 crates (24 minutes on 2 cores) to run five
# commands, and its server build named the executable after the package (`server`) instead of `paddock`.
#
#   1. `cargo build -p frontend --lib --target wasm32-unknown-unknown` in the `wasm-release` profile (`dev`
#      with --dev), in target/front. Same package, profile, target directory and environment as
#      cargo-leptos (LEPTOS_OUTPUT_NAME comes from .cargo/config.toml). A target directory of its own costs
#      nothing (the host-side proc-macros and build scripts of a wasm-release build are compiled in that
#      profile and with other features than the server's, so they could not be shared) and lets this build
#      run beside the server's (scripts/build.sh), as cargo holds a lock on its target directory.
#   2. wasm-bindgen --target web, out-name `paddock`, without the module's `name` section (11.5 MB of
#      function names, which only a debugger reads; the profile's `strip` would drop the
#      `target_features` section wasm-bindgen reads too); the wasm renamed from paddock_bg.wasm to
#      paddock.wasm (what Leptos' HydrationScripts load when LEPTOS_OUTPUT_NAME is set at compile time).
#   3. release: the JS glue minified (esbuild here, swc in cargo-leptos: both keep behaviour, bytes
#      differ). Unlike cargo-leptos, no `wasm-opt -Oz`: measured on this bundle (binaryen 123, the JS
#      build npm has, as no other download site is reachable), it took 409 s of a core in a clean
#      build and made the module smaller (8.36 MB to 7.12 MB) but what is sent larger: 1.56 MB with
#      brotli instead of 1.40 MB (rustc's own `opt-level = "z"` output, stripped, compresses better);
#      `-O1` saved 0.7% for 94 s. wasm-bindgen drops the module's 11.5 MB `name` section instead (step 2).
#   4. style/main.css through lightningcss with the same browserslist query (`defaults`) and the same
#      minify steps as cargo-leptos. The CLI is 1.0.0-alpha.72, one release after the alpha.71 that
#      cargo-leptos 0.3.10 links: the registry lacks some platform packages of alpha.71's CLI, which
#      `npm ci` refuses. On our stylesheet the one difference is colours with alpha written as #rrggbbaa
#      instead of rgba(), which every browser in `defaults` reads.
#   5. public/ mirrored into the site root.
#
# Everything is written to target/site.new and swapped in at the end: a failed build leaves the previous
# site as it was. Steps 2-5 are skipped when no input changed since the last build of the same profile
# (target/site.inputs lists them, outside what is served): `make run` after `make test` only asks cargo.
# Usage: scripts/site.sh [--dev]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

# Each step's line carries the seconds since the site build began: where its minutes go is read off the log.
say() { printf '\033[1m[site]\033[0m %s (at %d s)\n' "$*" "$SECONDS"; }

profile=wasm-release profile_dir=wasm-release release=1
if [ "${1:-}" = --dev ]; then profile=dev profile_dir=debug release=0; fi
name=paddock                        # [[workspace.metadata.leptos]] name; LEPTOS_OUTPUT_NAME
site=target/site new=target/site.new
tools=web/node_modules/.bin

for tool in wasm-bindgen "$tools/lightningcss" "$tools/esbuild"; do
  command -v "$tool" >/dev/null || { say "$tool is missing: run scripts/setup.sh first"; exit 1; }
done

say "cargo build -p frontend --target wasm32-unknown-unknown --profile $profile"
cargo build -p frontend --lib --target wasm32-unknown-unknown --profile "$profile" --target-dir target/front --timings
wasm="target/front/wasm32-unknown-unknown/$profile_dir/frontend.wasm"

# What the output depends on besides the wasm: sizes and times of every input file, and the tools.
inputs() {
  echo "profile $profile"
  find "$wasm" style public scripts/site.sh web/package-lock.json -type f -printf '%p %s %T@\n' | sort
  wasm-bindgen --version
}
if [ -f "$site.inputs" ] && [ -f "$site/pkg/$name.wasm" ] && inputs | cmp -s - "$site.inputs"; then
  say "$site is up to date"
  exit 0
fi

rm -rf "$new"
mkdir -p "$new/pkg"
# Assets first, so a file in public/ can never shadow a generated one (cargo-leptos refuses public/pkg).
[ ! -e public/pkg ] || { say "public/pkg would collide with the generated bundle: move it"; exit 1; }
cp -a public/. "$new/"

say "wasm-bindgen"
wasm-bindgen --target web --no-typescript --remove-name-section --out-name "$name" --out-dir "$new/pkg" \
  "$wasm"
mv "$new/pkg/${name}_bg.wasm" "$new/pkg/$name.wasm"

if [ $release = 1 ]; then
  say "minify $name.js"
  "$tools/esbuild" --minify --format=esm --log-level=warning "$new/pkg/$name.js" --outfile="$new/pkg/$name.min.js"
  mv "$new/pkg/$name.min.js" "$new/pkg/$name.js"
fi

say "lightningcss style/main.css"
css_flags=(--targets defaults); [ $release = 1 ] && css_flags+=(--minify)
"$tools/lightningcss" "${css_flags[@]}" style/main.css -o "$new/pkg/$name.css"

# The server serves these beside each file to browsers that accept them (ServeDir's precompressed
# files): brotli takes the wasm to about a quarter of its size. Node's zlib, as no brotli CLI is installed.
say "brotli and gzip copies of the bundle"
node -e '
const fs = require("fs"), path = require("path"), zlib = require("zlib");
const dir = process.argv[1];
for (const name of fs.readdirSync(dir).filter((f) => /\.(wasm|js|css)$/.test(f))) {
  const file = path.join(dir, name), data = fs.readFileSync(file);
  const quality = { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.length };
  fs.writeFileSync(file + ".br", zlib.brotliCompressSync(data, { params: quality }));
  fs.writeFileSync(file + ".gz", zlib.gzipSync(data, { level: 9 }));
  // One Last-Modified for every variant, so that revalidating in another encoding still gets a 304.
  const { atime, mtime } = fs.statSync(file);
  for (const packed of [file + ".br", file + ".gz"]) fs.utimesSync(packed, atime, mtime);
}' "$new/pkg"

inputs >"$site.inputs.new"
rm -rf target/site.old
[ ! -e "$site" ] || mv "$site" target/site.old
mv "$new" "$site"
mv "$site.inputs.new" "$site.inputs"
rm -rf target/site.old
say "$site: $(du -sh "$site/pkg/$name.wasm" | cut -f1) wasm ($profile)"
