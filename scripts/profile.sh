#!/usr/bin/env bash
# Per-function size profile of the shipped wasm (issue 14): the same build as scripts/build.sh
# (wasm-bindgen included)
# but with the name section kept, then `twiggy top` (and `twiggy dominators` with --dom).
# twiggy comes from crates.io: `cargo install twiggy` (not needed by the build or the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v twiggy >/dev/null || { echo "twiggy not found: cargo install twiggy" >&2; exit 1; }
cargo build --quiet --lib --profile wasm --target wasm32-unknown-unknown --features tiny
out=target/profile
rm -rf $out && mkdir -p $out
wasm-bindgen target/wasm32-unknown-unknown/wasm/llm_rum.wasm --target web --out-dir $out \
  --out-name llm_rum --no-typescript --encode-into always --omit-default-module-path
# As build.sh, less --strip-debug (-g keeps the names twiggy reads; the code is the same).
node_modules/.bin/wasm-opt -Oz --low-memory-unused -g --enable-reference-types --enable-bulk-memory --enable-nontrapping-float-to-int \
  --enable-sign-ext --enable-mutable-globals --strip-producers --converge \
  $out/llm_rum_bg.wasm -o $out/named.wasm
# About the shipped size (names stripped afterwards: within ~0.5 % of build.sh's file), brotli 11
# as scripts/size.js counts it — quick to compare two variants without a full build.
node_modules/.bin/wasm-opt --strip-debug --strip-target-features $out/named.wasm -o $out/stripped.wasm
node -e 'const z = require("zlib"), b = require("fs").readFileSync(process.argv[1]);
  console.log("wasm ≈ " + b.length + " B raw, " + z.brotliCompressSync(b, { params: { [z.constants.BROTLI_PARAM_QUALITY]: 11 } }).length + " B brotli");' $out/stripped.wasm
twiggy top -n "${TOP:-30}" $out/named.wasm
if [ "${1:-}" = "--dom" ]; then twiggy dominators -d 2 -r 40 $out/named.wasm; fi
