#!/usr/bin/env bash
# Builds the npm package into dist/: the wasm core (size-optimised with binaryen's wasm-opt
# from npm — Debian's wasm-opt 108 corrupts wasm-bindgen's externref table), the wasm-bindgen
# glue, and the js/ facade with its hand-written types.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --quiet --lib --profile wasm --target wasm32-unknown-unknown --features tiny
rm -rf dist
mkdir -p dist/wasm
wasm-bindgen target/wasm32-unknown-unknown/wasm/llm_rum.wasm \
  --target web --out-dir dist/wasm --out-name llm_rum --no-typescript --encode-into always
node_modules/.bin/wasm-opt -Oz --enable-reference-types --enable-bulk-memory --enable-nontrapping-float-to-int \
  --enable-sign-ext --enable-mutable-globals --strip-debug --strip-producers --strip-target-features \
  --converge dist/wasm/llm_rum_bg.wasm -o dist/wasm/llm_rum_bg.wasm
# The facade is bundled into one ES module and minified like the glue (esbuild, from npm);
# the wasm glue stays a separate module loaded by init() with a dynamic import, so importing
# the package loads no wasm and touches no global.
# The OTLP exporter (js/deliver/otlp.js) is split into its own chunk, loaded only with
# `exporter: 'otlp'`.
node_modules/.bin/esbuild js/index.js --bundle --splitting --format=esm --minify --sourcemap \
  --external:./wasm/llm_rum.js --outdir=dist --chunk-names='[name]-[hash]' --log-level=warning
# The glue keeps what js/core.js imports (the Core class and the loader): wasm-bindgen's
# initSync and its deprecation warnings are never called, so they are not shipped. Bundled in
# place, so the glue's own `new URL('llm_rum_bg.wasm', import.meta.url)` still finds the wasm.
echo "export { Core, default } from './llm_rum.js';" > dist/wasm/used.js
node_modules/.bin/esbuild dist/wasm/used.js --bundle --format=esm --minify \
  --outfile=dist/wasm/llm_rum.min.js --log-level=warning
mv dist/wasm/llm_rum.min.js dist/wasm/llm_rum.js
rm dist/wasm/used.js
cp js/index.d.ts dist/
echo "[build] dist/ ready: $(du -sb dist | cut -f1) bytes"
