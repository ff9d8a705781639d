#!/usr/bin/env bash
# A loopback load test of a release build: latlab on the embedded default with the seed
# study, then 200 clients for 60 s over the home page, the runs list, the seed comparison
# and the JSON API (server/examples/loadtest.rs). Prints a table per route; exits non-zero
# on any error.
#
# usage: scripts/loadtest.sh [CLIENTS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS=${1:-200}
SECONDS_=${2:-60}
export PATH="$HOME/.cargo/bin:$PATH"
SQLX_OFFLINE=true cargo build --release -p server --bin latlab --example loadtest
DATA=$(mktemp -d /tmp/latlab-load.XXXXXX)
chmod 755 "$DATA"
PORT=3900
LATLAB_ADDR=127.0.0.1:$PORT LATLAB_DATA_DIR=$DATA LATLAB_WORKERS=0 RUST_LOG=warn \
  LATLAB_SITE_ROOT=$PWD/target/site target/release/latlab &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA"' EXIT
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.5; done
SLUG=qwen3-8b-h100-gpustack   # the seed study (server/src/seed.rs SEED_SLUG)
echo "release build, $(nproc) cores, client on the same machine; comparison /c/$SLUG"
target/release/examples/loadtest "http://127.0.0.1:$PORT" "$CLIENTS" "$SECONDS_" / /runs "/c/$SLUG" /api/runs "/api/comparisons/$SLUG"
