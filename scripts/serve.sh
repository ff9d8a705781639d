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
exec target/debug/latlab
