#!/usr/bin/env bash
# Installs what a fresh machine lacks, skipping what is already there:
# the wasm target, wasm-bindgen-cli at the crate's pinned version, Chromium + chromedriver,
# nginx and prometheus (Debian packages), and the npm dev dependencies (Playwright library,
# binaryen's wasm-opt).
# No browser downloads: Playwright drives the system Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
WB_VERSION=0.2.130

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

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  say "installing chromium and chromium-driver from apt"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
fi

# The collector's proxy test puts a real nginx in front of it.
if [ ! -x /usr/sbin/nginx ] && ! command -v nginx >/dev/null 2>&1; then
  say "installing nginx from apt"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nginx >/dev/null
fi

# The collector's Prometheus test scrapes two collectors with a real Prometheus and checks the
# generated alerting rules with promtool (both from Debian's prometheus package).
if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
  say "installing prometheus (and promtool) from apt"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq prometheus >/dev/null
fi

if [ ! -d node_modules/@playwright/test ] || [ ! -d node_modules/binaryen ] \
   || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm dev dependencies"
  npm ci --no-audit --no-fund --loglevel=error
fi

# The OTLP exporter's test parses payloads with the official opentelemetry-proto definitions
# (Python, from PyPI), in a private virtualenv.
if [ ! -x .tools/venv/bin/python ] || ! .tools/venv/bin/python -c 'import opentelemetry.proto' 2>/dev/null; then
  say "installing opentelemetry-proto (PyPI) into .tools/venv"
  python3 -m venv .tools/venv
  .tools/venv/bin/pip install -q --disable-pip-version-check opentelemetry-proto
fi
