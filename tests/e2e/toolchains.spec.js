// Drop-in in every toolchain (issue 17), as a new user would try it: the package packed with
// `npm pack` and installed from the tarball into tests/toolchains/ (pinned bundler versions,
// installed by scripts/setup.sh), one minimal app (tests/toolchains/app/scenario.js) built by
// each toolchain with its defaults, loaded in headless Chromium against the scripted server:
// init() active, a record with ttft and firstPaint, the app's text complete, the app's
// blocking chunk handler blamed on `stream-read`, no build-machine path in what was built.
// Plus Node import/require and `tsc --strict` with and without the DOM lib.
// Each build is bounded in time; sizes of what each page loaded of the SDK are printed as
// `toolchain <name> …` lines and kept in test-results/toolchains.json.
import { test, expect } from '@playwright/test';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { ORIGIN, testId, truth } from './util.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const fixture = path.join(root, 'tests/toolchains');
const bin = (name) => path.join(fixture, 'node_modules/.bin', name);
const out = (name) => path.join(root, 'tests/e2e/pages/toolchains', name); // served at /toolchains/<name>/
const figures = {};

/** Runs a command in the fixture, bounded; resolves { code, output, ms }. */
function run(cmd, args, { env = {}, timeoutMs = 120_000, cwd = fixture } = {}) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const child = spawn(cmd, args, { cwd, env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const timer = setTimeout(() => {
      output += `\n[killed after ${timeoutMs} ms]`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output, ms: Date.now() - t0 });
    });
  });
}

async function build(name, cmd, args, opts) {
  const r = await run(cmd, args, opts);
  console.log(`toolchain ${name} build ${r.code === 0 ? 'ok' : 'FAILED'} in ${(r.ms / 1000).toFixed(1)} s`);
  expect(r.code, `${name} build:\n${r.output.slice(-3000)}`).toBe(0);
  return r;
}

/** The HTML page of the apps whose toolchain does not write one. */
function page(name, script) {
  fs.writeFileSync(path.join(out(name), 'index.html'), `<!doctype html><meta charset="utf-8"><title>${name}</title><div id="answer"></div>${script}\n`);
}

/** Every file a build wrote (for the build-machine path check). */
function files(dir) {
  return fs.readdirSync(dir, { recursive: true }).map((f) => path.join(dir, String(f))).filter((f) => fs.statSync(f).isFile());
}

/** No build-machine path in what ships to the browser (source maps aside: not shipped by default). */
function noBuildPaths(dir) {
  const leaks = [];
  for (const f of files(dir)) {
    if (!/\.(js|mjs|html|css|wasm)$/.test(f)) continue;
    const s = fs.readFileSync(f, 'latin1');
    // The checkout's path, or any file:// URL into a node_modules (Turbopack's runtime has a
    // `file:///ROOT/…` template of its own, which is not one).
    if (s.includes(root) || /file:\/\/[^"'`\s]*node_modules/.test(s)) leaks.push(path.relative(dir, f));
  }
  expect(leaks, 'files with a build-machine path').toEqual([]);
}

const brotli = (b) => zlib.brotliCompressSync(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length;

/**
 * Loads the built app, streams one answer through it and checks the record, and where the wasm
 * came from (`wasm`: 'file' or 'inline'; `missing`: the 404s expected on the way). What the page
 * loaded of the SDK — JS files holding its code (they hold the app's few lines too), the wasm
 * or its inline copy — is summed raw and brotli.
 */
async function check(browserPage, name, { url = `${ORIGIN()}/toolchains/${name}/index.html`, api = '', wasm: expectWasm, missing: expectMissing = [] }) {
  const errors = [];
  browserPage.on('pageerror', (e) => errors.push(String(e)));
  const warnings = [];
  browserPage.on('console', (m) => m.type() === 'warning' && warnings.push(m.text()));
  const loaded = [];
  browserPage.on('response', async (r) => {
    if (!/\.(m?js|wasm)(\?|$)/.test(r.url())) return;
    const l = { url: r.url(), status: r.status(), body: Buffer.alloc(0) };
    loaded.push(l);
    l.body = await r.body().catch(() => l.body);
  });
  await browserPage.goto(url);
  await browserPage.waitForFunction(() => typeof window.__run === 'function', null, { timeout: 20_000 });
  const id = testId(`toolchain-${name}`);
  const res = await browserPage.evaluate(({ api, id }) => window.__run(api, id), { api, id });
  const t = await truth(id);

  expect(errors).toEqual([]);
  expect(warnings.filter((w) => w.includes('llm-rum')), 'llm-rum warnings').toEqual([]);
  expect(res.active, 'init() active').toBe(true);
  const rec = res.record;
  expect(rec, 'a record').not.toBeNull();
  expect(rec.outcome).toBe('ok');
  // The app's text complete, and what the SDK counted of it.
  expect(res.deltas).toBe(t.content_tokens);
  expect(res.shown).toBe(res.text);
  expect(rec.chars).toBe([...res.text].length);
  // Real values: ttft after the scripted 60 ms prefill, first paint after the first token.
  expect(rec.ttft).toBeGreaterThanOrEqual(60);
  expect(rec.ttft).toBeLessThan(5000);
  // Its first token may reach the page before the core does (the inline copy comes after a 404):
  // then its first paint is unknown and the record says so (issue 27: nothing is held for the
  // core); the rest of what the person saw is measured either way.
  if (rec.unseen.includes('firstPaint')) expect([rec.marks.firstPaint, rec.ttfp]).toEqual([null, null]);
  else expect(rec.marks.firstPaint).toBeGreaterThanOrEqual(rec.marks.firstToken);
  expect(rec.marks.lastPaint).toBeGreaterThanOrEqual(rec.marks.lastToken);
  expect(rec.traceId).toMatch(/^[0-9a-f]{32}$/);
  // The 400 ms block in the app's chunk handler: a render stall, blamed on the stream read it
  // ran in (LoAF's entry point is the SDK's re-stream callback in the app's bundle).
  const render = rec.stallList.filter((s) => s.cause === 'render');
  expect(render.length, JSON.stringify(rec.stallList)).toBeGreaterThanOrEqual(1);
  const longest = render.reduce((a, s) => (s.dur > a.dur ? s : a));
  expect(longest.dur).toBeGreaterThanOrEqual(350);
  expect(longest.blame, JSON.stringify(longest)).toEqual({ invoker: 'stream-read', source: '', scriptMs: expect.any(Number) });
  expect(longest.blame.scriptMs).toBeGreaterThanOrEqual(350);

  const sdk = loaded.filter((l) => l.status === 200 && (/\.wasm(\?|$)/.test(l.url) || l.body.includes('measurement disabled') || l.body.includes('Uint8Array.from(atob(') || l.body.includes('__wbindgen')));
  const wasm = sdk.some((l) => /\.wasm(\?|$)/.test(l.url)) ? 'file' : 'inline';
  const size = { raw: sdk.reduce((n, l) => n + l.body.length, 0), brotli: sdk.reduce((n, l) => n + brotli(l.body), 0) };
  const missing = loaded.filter((l) => l.status === 404).map((l) => new URL(l.url).pathname);
  figures[name] = { wasm, ...size, files: sdk.length, notFound: missing, ttft: rec.ttft, blame: longest.blame.invoker };
  console.log(`toolchain ${name} wasm=${wasm} sdk-loaded raw=${size.raw} brotli=${size.brotli} files=${sdk.length} 404=${missing.join(',') || 'none'} ttft=${rec.ttft}`);
  // The file, or the inline copy (after a 404 where import.meta.url points beside the bundle).
  expect(wasm).toBe(expectWasm);
  expect(missing).toEqual(expectMissing);
}

test.beforeAll(async () => {
  // The package as published: `npm pack` of this tree (dist/ built by scripts/build.sh),
  // installed from the tarball into the fixture as npm would (the package has no dependencies).
  test.setTimeout(60_000);
  const tmp = fs.mkdtempSync(path.join(root, 'test-results/pack-'));
  const r = await run('npm', ['pack', '--silent', '--pack-destination', tmp], { cwd: root });
  expect(r.code, r.output).toBe(0);
  const tgz = path.join(tmp, r.output.trim().split('\n').pop());
  const dest = path.join(fixture, 'node_modules/llm-rum');
  fs.rmSync(dest, { recursive: true, force: true });
  fs.mkdirSync(dest, { recursive: true });
  const x = await run('tar', ['-xzf', tgz, '-C', dest, '--strip-components=1']);
  expect(x.code, x.output).toBe(0);
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.rmSync(path.join(root, 'tests/e2e/pages/toolchains'), { recursive: true, force: true });
});

test.afterAll(() => {
  // Merged: after a failed test Playwright goes on in a fresh worker (scripts/test.sh removes
  // the file before a run).
  const file = path.join(root, 'test-results/toolchains.json');
  const before = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify({ ...before, ...figures }, null, 2));
});

test('webpack 5: no configuration', async ({ page: p }) => {
  await build('webpack', process.execPath, ['webpack.mjs'], { env: { OUT: out('webpack') } });
  page('webpack', '<script src="main.js"></script>');
  noBuildPaths(out('webpack'));
  await check(p, 'webpack', { wasm: 'file' });
});

test('Vite: no configuration', async ({ page: p }) => {
  await build('vite', bin('vite'), ['build', '--config', 'vite.config.js'], { env: { OUT: out('vite') } });
  noBuildPaths(out('vite'));
  await check(p, 'vite', { wasm: 'file' });
});

test('Parcel 2: no configuration', async ({ page: p }) => {
  await build('parcel', bin('parcel'), ['build', 'app/index.html', '--dist-dir', out('parcel'), '--public-url', '/toolchains/parcel/', '--no-cache', '--no-source-maps', '--log-level', 'warn']);
  noBuildPaths(out('parcel'));
  await check(p, 'parcel', { wasm: 'file' });
});

test('Rollup 4 + node-resolve: no configuration (the inline copy after one 404)', async ({ page: p }) => {
  await build('rollup', bin('rollup'), ['-c', 'rollup.config.mjs', '--silent'], { env: { OUT: out('rollup') } });
  page('rollup', '<script type="module" src="main.js"></script>');
  noBuildPaths(out('rollup'));
  await check(p, 'rollup', { wasm: 'inline', missing: ['/toolchains/rollup/wasm/llm_rum_bg.wasm'] });
});

test('Rollup 4: the documented step (the .wasm beside the bundle) loads the file', async ({ page: p }) => {
  // Same build as above; the one step: copy `llm-rum/llm_rum_bg.wasm` (an exports entry) there.
  await build('rollup-copy', bin('rollup'), ['-c', 'rollup.config.mjs', '--silent'], { env: { OUT: out('rollup-copy') } });
  const wasmFile = (await run(process.execPath, ['-p', "require.resolve('llm-rum/llm_rum_bg.wasm')"])).output.trim();
  fs.mkdirSync(path.join(out('rollup-copy'), 'wasm'));
  fs.copyFileSync(wasmFile, path.join(out('rollup-copy'), 'wasm/llm_rum_bg.wasm'));
  page('rollup-copy', '<script type="module" src="main.js"></script>');
  await check(p, 'rollup-copy', { wasm: 'file' });
});

for (const format of ['esm', 'iife']) {
  test(`esbuild --format=${format}: no configuration (the inline copy)`, async ({ page: p }) => {
    const name = `esbuild-${format}`;
    await build(name, bin('esbuild'), ['app/main.js', '--bundle', `--format=${format}`, `--outdir=${out(name)}`, '--log-level=error']);
    page(name, `<script ${format === 'esm' ? 'type="module" ' : ''}src="main.js"></script>`);
    noBuildPaths(out(name));
    // ESM: import.meta.url is the bundle's, the file is not beside it; IIFE: no URL, no request.
    await check(p, name, { wasm: 'inline', missing: format === 'esm' ? [`/toolchains/${name}/wasm/llm_rum_bg.wasm`] : [] });
  });
}

test('esbuild: the documented step (file loader + wasmUrl, --splitting) loads the file', async ({ page: p }) => {
  // `import wasmUrl from 'llm-rum/llm_rum_bg.wasm'` with `--loader:.wasm=file`, passed to init();
  // --splitting keeps the inline copy in a chunk of its own that this page never loads.
  const name = 'esbuild-wasmurl';
  const entry = path.join(fixture, 'app/wasmurl.js');
  await build(name, bin('esbuild'), [entry, '--bundle', '--format=esm', '--splitting', '--loader:.wasm=file', `--outdir=${out(name)}`, '--log-level=error']);
  page(name, '<script type="module" src="wasmurl.js"></script>');
  await check(p, name, { wasm: 'file' });
});

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

for (const bundler of ['turbopack', 'webpack']) {
  test(`Next.js (${bundler}): server component imports the package, client component runs init()`, async ({ page: p }) => {
    test.setTimeout(300_000);
    const dir = path.join(fixture, 'next');
    const distDir = `.next-${bundler}`;
    await build(`next-${bundler}`, bin('next'), ['build', ...(bundler === 'webpack' ? ['--webpack'] : [])], {
      cwd: dir,
      timeoutMs: 240_000,
      env: { NEXT_DIST_DIR: distDir },
    });
    noBuildPaths(path.join(dir, distDir, 'static'));
    // The prerendered page imported the package on the server.
    const html = fs.readFileSync(path.join(dir, distDir, 'server/app/index.html'), 'utf8');
    expect(html).toContain(JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).version);
    const port = await freePort();
    const child = spawn(bin('next'), ['start', '-H', '127.0.0.1', '-p', String(port)], {
      cwd: dir,
      env: { ...process.env, NEXT_TELEMETRY_DISABLED: '1', NEXT_DIST_DIR: distDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const origin = `http://127.0.0.1:${port}`;
      for (let i = 0; i < 100; i++) {
        if (await fetch(origin).then((r) => r.ok, () => false)) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      await check(p, `next-${bundler}`, { url: `${origin}/`, api: ORIGIN(), wasm: 'file' });
    } finally {
      await new Promise((done) => {
        if (child.exitCode !== null) return done();
        child.once('exit', done);
        process.kill(child.pid, 'SIGTERM');
      });
    }
  });
}

test('Node: import and require work, init() resolves inactive with one warning', async () => {
  const script = `
    import { createRequire } from 'node:module';
    const require = createRequire(import.meta.url);
    const warnings = [];
    console.warn = (...a) => warnings.push(a.join(' '));
    const esm = await import('llm-rum');
    const cjs = require('llm-rum');
    const fetchBefore = globalThis.fetch;
    const rum = await esm.init();
    const wasm = require.resolve('llm-rum/llm_rum_bg.wasm');
    process.stdout.write(JSON.stringify({ same: esm.init === cjs.init, version: esm.VERSION, active: rum.active, untouched: globalThis.fetch === fetchBefore, warnings, wasm }));`;
  const r = await run(process.execPath, ['--input-type=module', '-e', script]);
  expect(r.code, r.output).toBe(0);
  const o = JSON.parse(r.output);
  expect(o).toMatchObject({ same: true, active: false, untouched: true });
  expect(o.warnings).toEqual([expect.stringContaining('not a browser')]);
  expect(o.wasm).toMatch(/node_modules\/llm-rum\/dist\/wasm\/llm_rum_bg\.wasm$/);
});

test('TypeScript 5 and 7: the types check under --strict with and without the DOM lib', async () => {
  const dir = path.join(fixture, '.tsc');
  fs.mkdirSync(dir, { recursive: true });
  const results = [];
  for (const tsc of ['typescript', 'typescript7']) {
    for (const resolution of ['bundler', 'node16']) {
      for (const lib of [['es2022', 'dom'], ['es2022']]) {
        const file = path.join(dir, `tsconfig.${resolution}.${lib.length}.json`);
        const module = resolution === 'bundler' ? 'esnext' : 'node16';
        const compilerOptions = { strict: true, noEmit: true, skipLibCheck: false, target: 'es2022', module, moduleResolution: resolution, lib, types: [] };
        fs.writeFileSync(file, JSON.stringify({ compilerOptions, files: ['../consumer.ts'] }));
        const r = await run(process.execPath, [path.join(fixture, 'node_modules', tsc, 'bin/tsc'), '-p', file], { timeoutMs: 60_000 });
        results.push(`${tsc} ${resolution} lib=${lib.join('+')}: ${r.code === 0 ? 'ok' : r.output.trim()}`);
      }
    }
  }
  console.log(results.map((r) => 'toolchain tsc ' + r).join('\n'));
  expect(results.filter((r) => !r.endsWith(': ok'))).toEqual([]);
});
