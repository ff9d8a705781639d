#!/usr/bin/env bash
# README command 1: install what is missing, build, and serve latlab on
# http://127.0.0.1:3000 (LATLAB_ADDR to change). With DATABASE_URL unset latlab starts
# its own Postgres cluster (LATLAB_DATA_DIR, default /var/lib/latlab as root, else
# ~/.local/share/latlab) and stops it on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
export LATLAB_SITE_ROOT=${LATLAB_SITE_ROOT:-$PWD/target/site}
# As root, latlab starts engines as the unprivileged `nobody` (LATLAB_ENGINE_USER). A
# checkout that user cannot reach (e.g. under /root) could not start the native engine:
# then engines run as root, and we say so.
if [ "$(id -u)" = 0 ] && [ -z "${LATLAB_ENGINE_USER:-}" ] \
   && ! { runuser -u nobody -- test -x "$PWD/target/debug/latlab-engine" \
          && runuser -u nobody -- test -r "$PWD/assets/cache/qwen3/tokenizer.json"; }; then
  echo "[serve] note: user nobody cannot reach $PWD; engines will run as root." >&2
  echo "[serve]       Put latlab where nobody can read it, or set LATLAB_ENGINE_USER, to run them unprivileged." >&2
  export LATLAB_ENGINE_USER=root
fi
exec target/debug/latlab
