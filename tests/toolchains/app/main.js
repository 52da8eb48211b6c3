// Entry of the bundled apps (webpack, Rollup, esbuild, Parcel, Vite): the test calls
// window.__run(api, testId) once the page has loaded.
import { run } from './scenario.js';

window.__run = run;
