// The generated glue (js/wasm/llm_rum.js, scripts/build.sh) as loadCore uses it: its loader and
// the `Core` class. Imported through this file so that the bundler leaves out what the glue
// exports besides (`initSync`, a synchronous compile nobody here calls).
export { default, Core } from './wasm/llm_rum.js';
