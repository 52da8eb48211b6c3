#!/usr/bin/env bash
# The main job: build the package, the scripted LLM server and the collector, then serve the
# demo page on 127.0.0.1 (PORT, default 8080) with beacons going to the collector
# (COLLECTOR_PORT, default 4319; its dashboard is at that address). Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cargo build --quiet --release -p llm-rum-demo -p llm-rum-collector
PORT=${PORT:-8080}
COLLECTOR_PORT=${COLLECTOR_PORT:-4319}
PAGE="http://127.0.0.1:${PORT}"
COLLECTOR="http://127.0.0.1:${COLLECTOR_PORT}"

# The page learns the collector's address from a generated module.
mkdir -p target/demo-config
printf "export const collector = '%s/v1/rum';\nexport const dashboard = '%s/';\n" "$COLLECTOR" "$COLLECTOR" > target/demo-config/config.js

target/release/llm-rum-collector --listen "127.0.0.1:${COLLECTOR_PORT}" --db target/demo-rum.db \
  --allow-origin "$PAGE" --allow-origin "http://localhost:${PORT}" --budget 'perceivedTtft p95<=1000' --budget 'ttft p95<=800' &
collector_pid=$!
trap 'kill "$collector_pid" 2>/dev/null; wait "$collector_pid" 2>/dev/null' EXIT INT TERM

# Three panes load from http://localhost:PORT (another site → another renderer process);
# the server binds 127.0.0.1 only, which is where localhost resolves.
echo "[demo] open ${PAGE}/ — collector dashboard: ${COLLECTOR}/ (Ctrl-C stops both)"
target/release/llm-rum-demo --listen "127.0.0.1:${PORT}" --static /dist=dist \
  --static /config=target/demo-config --static /=demo/page
