#!/usr/bin/env bash
# Adds synthetic runs to a database for speed measurements and list tests:
#   DATABASE_URL=postgres://... scripts/seed-runs.sh [N_RUNS] [N_REQUESTS]
# (default 10000 runs, 1000000 request records, plus one run with 1,000 requests and 600
# telemetry samples). Appends; deletes nothing. Serve the result with LATLAB_WORKERS=0, or
# workers take its queued runs. Uses target/release/latlab when built, else target/debug.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DATABASE_URL:?set DATABASE_URL to the database to fill}"
runs=${1:-10000}
requests=${2:-1000000}
bin=${LATLAB_BIN:-}
if [ -z "$bin" ]; then
  for b in target/release/latlab target/debug/latlab; do
    if [ -x "$b" ]; then bin=$b; break; fi
  done
fi
[ -n "$bin" ] || { echo "seed-runs: build latlab first (cargo build --release -p server)" >&2; exit 1; }
exec "$bin" seed-runs "$runs" "$requests"
