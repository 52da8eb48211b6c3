#!/usr/bin/env bash
# The main job: build the package and the scripted LLM server, then serve the demo page on
# 127.0.0.1 (PORT, default 8080) and print its URL. Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cargo build --quiet --release -p llm-rum-demo
PORT=${PORT:-8080}
echo "[demo] open http://127.0.0.1:${PORT}/ (Ctrl-C to stop)"
exec target/release/llm-rum-demo --listen "127.0.0.1:${PORT}" --static /dist=dist --static /=demo/page
