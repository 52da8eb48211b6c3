#!/usr/bin/env bash
# Builds the npm package into dist/: the wasm core (size-optimised with binaryen's wasm-opt
# from npm — Debian's wasm-opt 108 corrupts wasm-bindgen's externref table), the wasm-bindgen
# glue, and the js/ facade with its hand-written types.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --quiet --lib --profile wasm --target wasm32-unknown-unknown
rm -rf dist
mkdir -p dist/wasm
wasm-bindgen target/wasm32-unknown-unknown/wasm/llm_rum.wasm \
  --target web --out-dir dist/wasm --out-name llm_rum --no-typescript
node_modules/.bin/wasm-opt -Oz --enable-reference-types --enable-bulk-memory --enable-nontrapping-float-to-int \
  --enable-sign-ext --enable-mutable-globals --strip-debug --strip-producers \
  dist/wasm/llm_rum_bg.wasm -o dist/wasm/llm_rum_bg.wasm
cp js/*.js js/index.d.ts dist/
echo "[build] dist/ ready: $(du -sb dist | cut -f1) bytes"
