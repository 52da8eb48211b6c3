#!/usr/bin/env bash
# Installs what a fresh machine lacks, skipping what is already there:
# the wasm target, wasm-bindgen-cli at the crate's pinned version, the three engines the tests
# run in — Chromium + chromedriver, Firefox ESR + geckodriver (crates.io), WebKitGTK's
# WebKitWebDriver + MiniBrowser with Xvfb (Debian packages) — nginx (the collector's proxy
# test), prometheus with promtool (the collector's Prometheus test), clickhouse-server (the
# collector's ClickHouse tests), the npm dev dependencies (Playwright library,
# selenium-webdriver, binaryen's wasm-opt), the toolchain test's pinned bundlers
# (tests/toolchains) and the real-UI test's chat libraries (tests/realui). No browser
# downloads: Playwright drives the system Chromium,
# W3C WebDriver the others.
set -euo pipefail
cd "$(dirname "$0")/.."
WB_VERSION=0.2.130
GECKODRIVER_VERSION=0.37.1

say() { printf '[setup] %s\n' "$*"; }

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  say "adding rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

if ! wasm-bindgen --version 2>/dev/null | grep -q " $WB_VERSION"; then
  say "installing wasm-bindgen-cli $WB_VERSION (takes a few minutes once)"
  # Not --locked: the registry mirror here lacks one locked transitive version.
  cargo install wasm-bindgen-cli --version "$WB_VERSION"
fi

# Debian packages: Chromium and its driver; Firefox ESR; WebKitGTK's WebDriver (brings the
# MiniBrowser it drives); Xvfb + xauth for xvfb-run (MiniBrowser has no headless mode); nginx
# (the collector's proxy test puts a real one in front of it); prometheus and promtool (the
# collector's Prometheus test scrapes two collectors with a real one and checks the generated
# alerting rules with promtool), clickhouse-server (the collector's ClickHouse store is tested
# against a real one: Debian's 18.16).
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/chromedriver ] || need+=(chromium-driver)
[ -x /usr/bin/firefox-esr ] || need+=(firefox-esr)
[ -x /usr/bin/WebKitWebDriver ] || need+=(webkit2gtk-driver)
[ -x /usr/bin/Xvfb ] || need+=(xvfb)
[ -x /usr/bin/xauth ] || need+=(xauth)
{ [ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1; } || need+=(nginx)
{ command -v prometheus && command -v promtool; } >/dev/null 2>&1 || need+=(prometheus)
[ -x /usr/sbin/clickhouse-server ] || need+=(clickhouse-server)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} from apt"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# geckodriver is not packaged by Debian: from crates.io (about 4 minutes, once).
GECKODRIVER=$(command -v geckodriver || echo "$HOME/.cargo/bin/geckodriver")
if ! "$GECKODRIVER" --version 2>/dev/null | grep -q "^geckodriver $GECKODRIVER_VERSION"; then
  say "installing geckodriver $GECKODRIVER_VERSION from crates.io (takes a few minutes once)"
  cargo install geckodriver --version "$GECKODRIVER_VERSION"
fi

if [ ! -d node_modules/@playwright/test ] || [ ! -d node_modules/binaryen ] || [ ! -d node_modules/selenium-webdriver ] \
   || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm dev dependencies"
  npm ci --no-audit --no-fund --loglevel=error
fi

# The toolchain test (tests/e2e/toolchains.spec.js) builds apps with pinned bundlers and
# compilers — webpack, Rollup, esbuild, Parcel, Vite, Next.js, TypeScript 5 and 7 — from their
# own fixture folder with its own lockfile (npm's cache makes a reinstall quick).
if [ ! -d tests/toolchains/node_modules/next ] || [ tests/toolchains/package-lock.json -nt tests/toolchains/node_modules/.package-lock.json ]; then
  say "installing the toolchain test's bundlers (tests/toolchains)"
  (cd tests/toolchains && npm ci --no-audit --no-fund --loglevel=error)
fi

# The real-UI test (tests/e2e/realui.spec.js) builds chat pages on real chat UI and streaming
# markdown libraries — react-markdown, Streamdown, assistant-ui, NLUX (with React 18, its peer
# range), Vue — pinned in their own fixture folder with its own lockfile.
if [ ! -d tests/realui/node_modules/streamdown ] || [ tests/realui/package-lock.json -nt tests/realui/node_modules/.package-lock.json ]; then
  say "installing the real-UI test's chat libraries (tests/realui)"
  (cd tests/realui && npm ci --no-audit --no-fund --loglevel=error)
fi

# The OTLP exporter's test parses payloads with the official opentelemetry-proto definitions
# and reads the semantic conventions' registry subset (tests/fixtures/genai-registry.yaml) with
# PyYAML (Python, from PyPI), in a private virtualenv.
if [ ! -x .tools/venv/bin/python ] || ! .tools/venv/bin/python -c 'import opentelemetry.proto, yaml' 2>/dev/null; then
  say "installing opentelemetry-proto and PyYAML (PyPI) into .tools/venv"
  python3 -m venv .tools/venv
  .tools/venv/bin/pip install -q --disable-pip-version-check opentelemetry-proto pyyaml
fi
