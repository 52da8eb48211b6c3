#!/usr/bin/env bash
# Builds the npm package into dist/: the wasm core (size-optimised with binaryen's wasm-opt
# from npm — not Debian's wasm-opt 108), and the js/ facade with its glue and hand-written types.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --quiet --lib --profile wasm --target wasm32-unknown-unknown --features tiny
rm -rf dist
mkdir -p dist/wasm
# No wasm-bindgen (issue 14): the core exports numbers-only functions (src/wasm/abi.rs) and the
# glue is hand-written (js/wasm/llm_rum.js), so rustc's output goes straight to wasm-opt.
# --low-memory-unused (−250 B brotli): addresses below 1024 are never used, so wasm-opt may fold
# constant offsets into loads and stores. True here: the stack starts at 1 MiB and grows down
# (data and the heap lie above it); reaching the low 1 KiB would take a 1 MiB stack overflow.
node_modules/.bin/wasm-opt -Oz --low-memory-unused --enable-reference-types --enable-bulk-memory --enable-nontrapping-float-to-int \
  --enable-sign-ext --enable-mutable-globals --strip-debug --strip-producers --strip-target-features \
  --converge target/wasm32-unknown-unknown/wasm/llm_rum.wasm -o dist/wasm/llm_rum_bg.wasm
# The inline copy (base64), for bundlers that leave the file behind (Rollup, esbuild) or an IIFE
# build with no import.meta.url: a module of its own that only loads when the file cannot be
# fetched. Decoded by atob (every browser, Node ≥ 16); ~4/3 of the wasm's bytes.
node -e '
  const fs = require("fs"), b64 = fs.readFileSync("dist/wasm/llm_rum_bg.wasm").toString("base64");
  fs.writeFileSync("dist/inline-wasm.js", "export default Uint8Array.from(atob(\"" + b64 + "\"), (c) => c.charCodeAt(0));\n");'
# The facade, with the glue, bundled into one ES module and minified (esbuild, from npm): the
# glue is not a module of its own, so nothing else is fetched before the wasm can start
# (issue 14: ready time), and dist/wasm/ holds the wasm file alone. Importing it loads no wasm
# and touches no global: init() does. The OTLP exporter, the beacon transport and paint
# observation are chunks of their own, loaded by init() when the options ask for them.
node_modules/.bin/esbuild js/index.js --bundle --splitting --format=esm --minify --sourcemap \
  --external:./inline-wasm.js --outdir=dist --chunk-names='[name]-[hash]' --log-level=warning
cp js/index.d.ts dist/
echo "[build] dist/ ready: $(du -sb dist | cut -f1) bytes"
