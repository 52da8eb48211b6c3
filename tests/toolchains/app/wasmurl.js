// esbuild's one documented step for loading the .wasm file (instead of the inline copy):
// the file loader (`--loader:.wasm=file`) emits it and hands over its URL, which init() takes.
import wasmUrl from 'llm-rum/llm_rum_bg.wasm';
import { run } from './scenario.js';

window.__run = (api, testId) => run(api, testId, { wasmUrl });
