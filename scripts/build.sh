#!/usr/bin/env bash
# Builds latlab: the browser bundle (wasm32 via Debian's rustc-web + -Zbuild-std,
# wasm-bindgen, wasm-opt) into target/site, then the `latlab` server binary (rustup
# stable). What cargo-leptos would do, without needing cargo-leptos (16 min to install
# here). Run scripts/setup.sh first.
#
# usage: scripts/build.sh [--server-profile dev|release]
set -euo pipefail
cd "$(dirname "$0")/.."
SERVER_PROFILE=dev
while [ $# -gt 0 ]; do
  case "$1" in
    --server-profile) SERVER_PROFILE=$2; shift 2 ;;
    *) echo "build.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
export PATH="$HOME/.cargo/bin:$PATH"
LLVM_MAJOR=$(/usr/bin/rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=${CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER:-/usr/lib/llvm-$LLVM_MAJOR/bin/wasm-ld}
SITE=target/site
PKG=$SITE/pkg
t0=$(date +%s)

echo "==> wasm bundle (frontend, profile wasm-release)"
# Its own target dir: the wasm half uses another compiler, and a separate dir lets it
# build while the server half builds.
RUSTUP_TOOLCHAIN=debian-web RUSTC_BOOTSTRAP=1 cargo build -p frontend --lib \
  --target wasm32-unknown-unknown --profile wasm-release --target-dir target/front \
  -Zbuild-std=std,panic_abort
mkdir -p "$PKG"
wasm-bindgen --target web --out-dir "$PKG" --out-name latlab --no-typescript \
  target/front/wasm32-unknown-unknown/wasm-release/frontend.wasm
# Leptos 0.8.23's HydrationScripts loads /pkg/<output-name>_bg.wasm, wasm-bindgen's own name.
wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals "$PKG/latlab_bg.wasm" -o "$PKG/latlab_bg.wasm"
cp style/main.css "$PKG/latlab.css"
cp -r public/. "$SITE/"
t1=$(date +%s)

echo "==> binaries: latlab, latlab-bench, latlab-engine (profile $SERVER_PROFILE)"
# Queries are checked against the committed .sqlx/, never against whatever DATABASE_URL
# points at. All binaries in one invocation: the same feature set as `cargo test
# --workspace`, so the test run reuses these artifacts.
SQLX_OFFLINE=true cargo build --workspace --exclude frontend --bins --profile "$SERVER_PROFILE"
t2=$(date +%s)
echo "==> built: wasm $((t1 - t0))s, binaries $((t2 - t1))s; bundle: $(stat -c %s "$PKG/latlab_bg.wasm") bytes wasm ($(gzip -c "$PKG/latlab_bg.wasm" | wc -c) gzipped), $(stat -c %s "$PKG/latlab.js") bytes js"
