#!/usr/bin/env bash
# Every test layer, in order: native core + server (cargo test), the browser layer
# (wasm-bindgen-test) in headless Chromium, headless Firefox ESR and WebKitGTK, end-to-end against the
# real scripted server (Playwright; its engines.spec.js drives Firefox ESR and WebKitGTK too,
# over W3C WebDriver; realui.spec.js runs chat pages built on real chat UI libraries,
# tests/realui). Ends with one summary line "N passed, N failed" summing all layers.
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

# wasm-bindgen-test-runner takes the first driver named by GECKODRIVER / CHROMEDRIVER, else the
# first found on PATH (geckodriver before chromedriver): name each one explicitly.
GECKODRIVER_BIN=$(command -v geckodriver || echo "$HOME/.cargo/bin/geckodriver")
wasm_tests() {
  local name=$1; shift
  echo "=== browser tests (wasm-bindgen-test, headless $name)"
  local t0=$SECONDS
  env -u GECKODRIVER -u CHROMEDRIVER "$@" cargo test --target wasm32-unknown-unknown --test browser 2>&1 | tee "test-results/wasm-$name.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || { status=1; grep -q ' failed' "test-results/wasm-$name.log" || failed=$((failed + 1)); }
  count_cargo "test-results/wasm-$name.log"
  echo "=== browser tests in $name: $((SECONDS - t0)) s"
}
wasm_tests Chromium CHROMEDRIVER=/usr/bin/chromedriver
wasm_tests Firefox GECKODRIVER="$GECKODRIVER_BIN"
# WebKitGTK (Safari's engine): wasm-bindgen-test-runner drives WebKitGTK's WebKitWebDriver as it
# drives safaridriver (SAFARIDRIVER; the session it asks for, with no capabilities, opens
# WebKitGTK's MiniBrowser), under Xvfb (MiniBrowser has no headless mode).
wasm_tests WebKit xvfb-run -a env SAFARIDRIVER=/usr/bin/WebKitWebDriver

echo "=== end-to-end tests (Playwright, system Chromium)"
rm -f test-results/e2e.json test-results/engines.json test-results/toolchains.json test-results/realui.json
t0=$SECONDS
npx playwright test "$@"
e2e=$?
echo "=== end-to-end tests: $((SECONDS - t0)) s (engines.spec.js per engine: see its 'engine' lines, test-results/engines.json)"
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
