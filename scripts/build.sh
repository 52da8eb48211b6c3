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
# Where the wasm comes from is js/core.js's decision (wasmBytes): it passes the glue either the
# fetched file or the inline copy, so the glue's own default — a second
# `new URL('llm_rum_bg.wasm', import.meta.url)`, which bundlers would follow too and which
# webpack would resolve to a build-machine path — is dead: cut out (exactly once, or the build fails).
node -e '
  const fs = require("fs"), f = "dist/wasm/llm_rum.js", s = fs.readFileSync(f, "utf8");
  const pat = "new URL(\x27llm_rum_bg.wasm\x27, import.meta.url)";
  if (s.split(pat).length !== 2) { console.error("build.sh: the glue default URL changed: " + pat); process.exit(1); }
  fs.writeFileSync(f, s.replace(pat, "undefined"));'
# The inline copy (base64), for bundlers that leave the file behind (Rollup, esbuild) or an IIFE
# build with no import.meta.url: a module of its own that only loads when the file cannot be
# fetched. Decoded by atob (every browser, Node ≥ 16); ~4/3 of the wasm's bytes.
node -e '
  const fs = require("fs"), b64 = fs.readFileSync("dist/wasm/llm_rum_bg.wasm").toString("base64");
  fs.writeFileSync("dist/wasm/inline.js", "export default Uint8Array.from(atob(\"" + b64 + "\"), (c) => c.charCodeAt(0));\n");'
# The facade is bundled into one ES module and minified like the glue (esbuild, from npm);
# the wasm glue stays a separate module loaded by init() with a dynamic import, so importing
# the package loads no wasm and touches no global.
# The OTLP exporter (js/deliver/otlp.js) is split into its own chunk, loaded only with
# `exporter: 'otlp'`.
node_modules/.bin/esbuild js/index.js --bundle --splitting --format=esm --minify --sourcemap \
  --external:./wasm/llm_rum.js --external:./wasm/inline.js --outdir=dist --chunk-names='[name]-[hash]' --log-level=warning
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
