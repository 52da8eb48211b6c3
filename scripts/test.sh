#!/usr/bin/env bash
# Every test layer, in order: native core + server (cargo test), the browser layer in headless
# Chromium (wasm-bindgen-test), end-to-end against the real scripted server (Playwright).
# Ends with one summary line "N passed, N failed" summing all layers.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }

mkdir -p test-results
passed=0
failed=0
status=0

# Sums the "test result: ... N passed; M failed" lines of cargo / wasm-bindgen-test output.
count_cargo() {
  local log=$1 p f
  p=$(grep -Eo 'test result: [a-zA-Z]+\. [0-9]+ passed' "$log" | grep -Eo '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
  f=$(grep -Eo '[0-9]+ failed' "$log" | awk '{s+=$1} END {print s+0}')
  passed=$((passed + p)); failed=$((failed + f))
}

layer() {
  local name=$1; shift
  echo "=== $name"
  if ! "$@"; then status=1; echo "=== $name: FAILED"; return 1; fi
}

layer build bash scripts/build.sh || { echo "0 passed, 1 failed"; exit 1; }
# A real app bundle of the package + the openai client (Vite), served to the e2e tests.
layer "app bundle" node_modules/.bin/vite build --config tests/e2e/openai-app/vite.config.js || { echo "0 passed, 1 failed"; exit 1; }
layer "server build" cargo build --quiet --release -p llm-rum-demo -p llm-rum-collector || { echo "0 passed, 1 failed"; exit 1; }

echo "=== native tests (cargo test --workspace)"
cargo test --workspace 2>&1 | tee test-results/cargo.log
[ "${PIPESTATUS[0]}" -eq 0 ] || { status=1; grep -q ' failed' test-results/cargo.log || failed=$((failed + 1)); }
count_cargo test-results/cargo.log

echo "=== browser tests (wasm-bindgen-test, headless Chromium)"
cargo test --target wasm32-unknown-unknown --test browser 2>&1 | tee test-results/wasm.log
[ "${PIPESTATUS[0]}" -eq 0 ] || { status=1; grep -q ' failed' test-results/wasm.log || failed=$((failed + 1)); }
count_cargo test-results/wasm.log

echo "=== end-to-end tests (Playwright, system Chromium)"
rm -f test-results/e2e.json
npx playwright test "$@"
e2e=$?
if [ -f test-results/e2e.json ]; then
  read -r p f < <(node -e '
    const r = require("./test-results/e2e.json").stats;
    console.log(r.expected + " " + (r.unexpected + r.flaky));')
  passed=$((passed + p)); failed=$((failed + f))
  [ "$e2e" -eq 0 ] || { status=1; [ "$f" -gt 0 ] || failed=$((failed + 1)); }
else
  status=1; failed=$((failed + 1))
fi

echo
echo "${passed} passed, ${failed} failed"
exit $status
