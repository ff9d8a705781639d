#!/usr/bin/env bash
# README command 2: install what is missing, build, and run every test: Rust unit and
# integration tests (a real Postgres for #[sqlx::test]), then the browser tests (a real
# latlab on its embedded Postgres, Debian chromium via playwright-core). GPU tests are
# #[ignore = "gpu"] and run on the GPU machine only.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH"
T0=$(date +%s)
bash scripts/setup.sh
T1=$(date +%s)
bash scripts/build.sh
# ---- format and lints gate every change (rustfmt.toml; warnings are errors) ----
cargo fmt --all -- --check
SQLX_OFFLINE=true cargo clippy --workspace --all-targets -- -D warnings
T2=$(date +%s)

# ---- a throw-away Postgres cluster for #[sqlx::test] (each test makes its own database) ----
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PGDIR=$(mktemp -d /tmp/latlab-test-pg.XXXXXX)
chmod 755 "$PGDIR"
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres: "$PGDIR"
as_pg "$PGBIN/initdb" -D "$PGDIR/data" -U latlab --auth=trust --no-locale -E UTF8 >/dev/null
as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/log" -w \
  -o "-c listen_addresses='' -k $PGDIR -c max_connections=200 -c fsync=off" start >/dev/null
cleanup() { as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$PGDIR"; }
trap cleanup EXIT
export DATABASE_URL="postgres://latlab@localhost/postgres?host=$PGDIR"

# ---- Rust tests (the browser bundle crate is wasm-only and has none) ----
# LATLAB_REQUIRE_NVRTC: the kernel compile check must run here, not skip.
# RUST_TEST_THREADS=1: one test at a time within each test binary. Twice on this 2-core
# machine a server test that renders pages hung until the 30 s request timeout while a
# sibling test rendered on another thread (never reproduced alone); the timing tests of
# bench and engine also measure better without a neighbour.
SQLX_OFFLINE=true LATLAB_REQUIRE_NVRTC=1 RUST_TEST_THREADS=1 cargo test --workspace --exclude frontend --no-fail-fast
T3=$(date +%s)

# ---- browser tests ----
(cd end2end && node --test --test-concurrency=1 tests/)
T4=$(date +%s)
echo "[test] setup $((T1-T0))s, build $((T2-T1))s, cargo tests $((T3-T2))s, browser tests $((T4-T3))s, total $((T4-T0))s"
