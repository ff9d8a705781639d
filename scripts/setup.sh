#!/usr/bin/env bash
# Installs everything latlab needs to build, serve and test on a fresh Debian 12 machine
# with rustup stable (run as root, or with sudo available). Idempotent: each step checks
# first, so a second run takes seconds.
#
#   PostgreSQL server      apt postgresql (the embedded default cluster, and tests)
#   wasm32 toolchain       apt rustc-web cargo-web rust-web-src (1.96, LLVM with the wasm
#                          backend) + lld (wasm-ld); linked as rustup toolchain `debian-web`
#                          (rustup here cannot download the wasm32 target; std is built
#                          from source with -Zbuild-std)
#   wasm-bindgen-cli       cargo install, the exact version of the wasm-bindgen crate in Cargo.lock
#   wasm-opt               npm binaryen@132 (Debian's binaryen 108 breaks the bundle)
#   chromium               apt chromium, for the browser tests; playwright-core from npm
#   CJK font               apt fonts-droid-fallback (2 MB): the seed study's Japanese names
#                          (ladder table, hover titles, PNG exports) as glyphs, not boxes
#   NVRTC                  pip nvidia-cuda-nvrtc + nvidia-cuda-runtime: compile-checks every
#                          CUDA kernel for sm_90a on machines without a GPU
#   assets                 the Qwen3 tokenizer and ShareGPT (scripts/fetch-assets.sh)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export DEBIAN_FRONTEND=noninteractive
export PATH="$HOME/.cargo/bin:$PATH"
BINARYEN_VERSION=132
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
log() { echo "[setup] $*"; }
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
T0=$(date +%s)

# ---- Debian packages -------------------------------------------------------------
want=(postgresql rustc-web cargo-web rust-web-src chromium fonts-droid-fallback)
missing=(); for p in "${want[@]}"; do have_pkg "$p" || missing+=("$p"); done
# Node.js may come from elsewhere (NodeSource bundles npm); only add Debian's when absent.
command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  log "apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/latlab-setup-apt.log 2>&1 \
    || { tail -20 /tmp/latlab-setup-apt.log; exit 1; }
fi
RUSTC_WEB=$(/usr/bin/rustc -V)
case "$RUSTC_WEB" in rustc\ 1.9[6-9]*|rustc\ 1.[1-9][0-9][0-9]*) ;; *) log "need Debian rustc-web >= 1.96, have: $RUSTC_WEB"; exit 1;; esac
LLVM_MAJOR=$(/usr/bin/rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
if ! have_pkg "lld-$LLVM_MAJOR"; then
  log "apt-get install lld-$LLVM_MAJOR (wasm-ld for rustc-web's LLVM $LLVM_MAJOR)"
  $SUDO apt-get install -y -qq --no-install-recommends "lld-$LLVM_MAJOR" >/tmp/latlab-setup-apt.log 2>&1 \
    || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "lld-$LLVM_MAJOR"; }
fi
[ -x "/usr/lib/llvm-$LLVM_MAJOR/bin/wasm-ld" ] || { log "no wasm-ld at /usr/lib/llvm-$LLVM_MAJOR/bin"; exit 1; }

# ---- rustfmt and clippy: scripts/test.sh gates on them ----------------------------------
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  rustup component add rustfmt clippy || { echo "setup: rustfmt and clippy are needed (rustup component add rustfmt clippy)" >&2; exit 1; }
  log "installed rustfmt and clippy"
fi

# ---- rustup name for Debian's wasm-capable compiler --------------------------------
if ! rustup toolchain list | grep -q '^debian-web'; then
  rustup toolchain link debian-web /usr
  log "linked rustup toolchain debian-web -> /usr ($RUSTC_WEB)"
fi

# ---- wasm-bindgen-cli: must equal the wasm-bindgen crate in Cargo.lock -------------
WBG=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p' | head -1)
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WBG" ]; then
  log "cargo install wasm-bindgen-cli $WBG (about 2 minutes)"
  # --locked first; its lockfile has pinned a crate version the registry did not serve,
  # so fall back to a fresh resolution of the same CLI version.
  cargo install --locked --quiet wasm-bindgen-cli --version "$WBG" 2>/dev/null \
    || cargo install --quiet wasm-bindgen-cli --version "$WBG"
fi

# ---- wasm-opt from npm -------------------------------------------------------------
if ! /usr/local/bin/wasm-opt --version 2>/dev/null | grep -q "version $BINARYEN_VERSION\b"; then
  log "npm binaryen@$BINARYEN_VERSION -> /usr/local/bin/wasm-opt"
  $SUDO mkdir -p /opt/binaryen-npm
  $SUDO npm install --prefix /opt/binaryen-npm --no-audit --no-fund --loglevel=error "binaryen@$BINARYEN_VERSION" >/dev/null
  $SUDO ln -sf /opt/binaryen-npm/node_modules/binaryen/bin/wasm-opt /usr/local/bin/wasm-opt
fi

# ---- browser test driver -------------------------------------------------------------
if [ ! -d end2end/node_modules/playwright-core ]; then
  log "npm ci in end2end/ (playwright-core; the browser is Debian's chromium)"
  (cd end2end && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

# ---- NVRTC from PyPI: CI compile-checks every CUDA kernel for sm_90a without a GPU ----
if ! python3 -c "import nvidia, os, sys; sys.exit(0 if any(os.path.exists(os.path.join(p, 'cu13/include/cuda_bf16.h')) for p in nvidia.__path__) else 1)" 2>/dev/null; then
  log "pip nvidia-cuda-nvrtc + nvidia-cuda-runtime 13.5.37 (headers and libnvrtc for the kernel compile check)"
  python3 -m pip install --user --quiet --disable-pip-version-check nvidia-cuda-nvrtc==13.5.37 nvidia-cuda-runtime==13.5.37
fi

# ---- data ----------------------------------------------------------------------------
bash scripts/fetch-assets.sh

log "ready in $(( $(date +%s) - T0 ))s"
