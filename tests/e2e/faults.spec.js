// Fault injection (Chromium): every browser API the SDK relies on, made missing or throwing
// before init() — as an old engine, a locked-down page (sandboxed iframe, Safari private
// mode), or a strict Content-Security-Policy would have it. For each: init() resolves, the
// app's fetch body is byte-identical to what the server sent and its EventSource events are
// the native class's, nothing uncaught reaches the page (no error, no unhandled rejection),
// the SDK says at most one thing on the console, and what it says is true: "measurement
// disabled" only when it is (no record), "paint metrics off" only when paint fields are null
// while requests are still measured; silence when measurement went on (a record exists).
import { test, expect } from '@playwright/test';
import { ORIGIN, testId, truth } from './util.js';

// Each fault is a page init script (runs before any page script) and what must follow:
// `measured` — requests still produce records; `warn` — the one SDK warning expected, or null.
const FAULTS = [
  {
    name: 'no readable byte streams (WebKit before Safari 26.4)',
    script: `{
      const RS = ReadableStream;
      globalThis.ReadableStream = class ReadableStream extends RS {
        constructor(source, strategy) {
          if (source && source.type === 'bytes') throw new TypeError('ReadableByteStreamController is not implemented');
          super(source, strategy);
        }
      };
    }`,
    measured: true,
    warn: null,
  },
  { name: 'PerformanceObserver missing', script: `delete globalThis.PerformanceObserver;`, measured: true, warn: null },
  {
    name: 'PerformanceObserver throwing',
    script: `globalThis.PerformanceObserver = class { constructor() { throw new TypeError('not allowed'); } static get supportedEntryTypes() { return ['resource', 'long-animation-frame']; } };`,
    measured: true,
    warn: null,
  },
  ...['resource', 'long-animation-frame', 'interaction-contentful-paint'].map((type) => ({
    name: `entry type ${type} unsupported`,
    script: `{
      const PO = PerformanceObserver;
      const types = PO.supportedEntryTypes.filter((t) => t !== '${type}');
      globalThis.PerformanceObserver = class PerformanceObserver extends PO {
        static get supportedEntryTypes() { return types; }
        observe(o) { if (o && (o.type === '${type}' || (o.entryTypes || []).includes('${type}'))) throw new TypeError('unsupported entry type'); return super.observe(o); }
      };
    }`,
    measured: true,
    warn: null,
  })),
  { name: 'MutationObserver missing', script: `delete globalThis.MutationObserver;`, measured: true, warn: /paint metrics off/ },
  {
    name: 'MutationObserver throwing',
    script: `MutationObserver.prototype.observe = function () { throw new TypeError('not allowed'); };`,
    measured: true,
    warn: /paint metrics off/,
  },
  { name: 'requestAnimationFrame missing', script: `delete globalThis.requestAnimationFrame;`, measured: true, warn: /paint metrics off/ },
  {
    name: 'requestAnimationFrame throwing',
    script: `globalThis.requestAnimationFrame = () => { throw new TypeError('not allowed'); };`,
    measured: true,
    warn: /paint metrics off/,
  },
  // Paint observation needs no MessageChannel since issue 30 (brackets close at the next
  // frame's rAF callback); the core's next-task step falls back to setTimeout.
  { name: 'MessageChannel missing', script: `delete globalThis.MessageChannel;`, measured: true, warn: null },
  {
    name: 'MessageChannel throwing',
    script: `globalThis.MessageChannel = class { constructor() { throw new TypeError('not allowed'); } };`,
    measured: true,
    warn: null,
  },
  { name: 'navigator.sendBeacon missing', script: `Object.defineProperty(Navigator.prototype, 'sendBeacon', { value: undefined });`, measured: true, warn: null },
  {
    name: 'navigator.sendBeacon throwing',
    script: `Navigator.prototype.sendBeacon = () => { throw new TypeError('not allowed'); };`,
    measured: true,
    warn: null,
  },
  {
    name: 'localStorage and sessionStorage throwing on access (sandboxed iframe, Safari private mode)',
    script: `for (const k of ['localStorage', 'sessionStorage']) Object.defineProperty(window, k, { get() { throw new DOMException('The operation is insecure.', 'SecurityError'); } });`,
    measured: true,
    warn: null,
  },
  {
    name: 'crypto.getRandomValues throwing',
    script: `Crypto.prototype.getRandomValues = () => { throw new DOMException('not allowed', 'QuotaExceededError'); };`,
    measured: true,
    warn: null,
  },
  { name: 'TextDecoder missing', script: `delete globalThis.TextDecoder;`, measured: false, warn: /measurement disabled: the wasm core did not load/ },
  { name: 'WebAssembly missing', script: `delete globalThis.WebAssembly;`, measured: false, warn: /measurement disabled: the wasm core did not load/ },
  {
    name: "Content-Security-Policy without 'wasm-unsafe-eval'",
    csp: "default-src 'self'; script-src 'self' 'unsafe-inline'",
    measured: false,
    warn: /measurement disabled: the wasm core did not load/,
  },
  {
    name: "Content-Security-Policy with 'wasm-unsafe-eval' (the README's directives)",
    csp: "default-src 'self'; script-src 'self' 'unsafe-inline' 'wasm-unsafe-eval'; connect-src 'self'",
    measured: true,
    warn: null,
  },
];

for (const f of FAULTS) {
  test(`fault: ${f.name}`, async ({ page }) => {
    const uncaught = [];
    const console = [];
    page.on('pageerror', (e) => uncaught.push(String(e)));
    page.on('console', (m) => console.push({ type: m.type(), text: m.text() }));
    if (f.script) await page.addInitScript(f.script);
    await page.goto(`${ORIGIN()}/blank.html${f.csp ? '?csp=' + encodeURIComponent(f.csp) : ''}`);
    // Polled by hand: Playwright's waitForFunction uses the page's MutationObserver.
    for (let i = 0; !(await page.evaluate(() => window.llmRum !== undefined)); i++) {
      expect(i, 'the page loads').toBeLessThan(200);
      await new Promise((r) => setTimeout(r, 50));
    }
    const id = testId('fault');
    const esQuery = `prefill_ms=5&gap_ms=3&tokens=8`;
    const out = await page.evaluate(([id, esQuery]) => window.__scenario('workload', { id, esQuery }).then(JSON.parse), [id, esQuery]);
    const t = await truth(id);

    // The app is unaffected.
    expect(out.n).toBe(t.body_bytes);
    expect(out.fnv).toBe(t.body_fnv1a64);
    expect(out.esOurs.length).toBeGreaterThan(8);
    expect(out.esOurs).toEqual(out.esNative);
    expect(out.restored, 'shutdown restores the native fetch and EventSource').toBe(true);
    expect(uncaught, 'nothing uncaught').toEqual([]);
    const pageConsole = await page.evaluate(() => window.__console);
    expect(pageConsole.filter((c) => c.kind !== 'console.warn'), 'no errors or unhandled rejections').toEqual([]);

    // What the SDK said, and that it is true.
    const ours = console.filter((m) => m.text.startsWith('llm-rum:'));
    expect(ours.length, JSON.stringify(ours)).toBeLessThanOrEqual(1);
    expect(ours.every((m) => m.type === 'warning')).toBe(true);
    if (f.warn) expect(ours.map((m) => m.text).join(), 'the expected warning').toMatch(f.warn);
    else expect(ours, 'no warning').toEqual([]);
    expect(out.active).toBe(f.measured);
    if (f.measured) {
      const r = out.fetchRecord;
      expect(r, 'the request was measured').not.toBeNull();
      expect([r.outcome, r.format, r.bytes, r.contentEvents]).toEqual(['ok', 'openai-chat', t.body_bytes, 20]);
      if (f.warn && /paint metrics off/.test(f.warn.source)) expect(r.marks.firstPaint).toBeNull();
      else expect(r.marks.firstPaint, 'paint measured').not.toBeNull();
    } else {
      expect(out.records).toBe(0);
      expect(out.fetchRecord).toBeNull();
    }
    // The browser's own report of a CSP violation is the page's policy at work, not the
    // SDK's output; nothing else may appear as a console error.
    const errors = console.filter((m) => m.type === 'error' && !/Content Security Policy|wasm-unsafe-eval/.test(m.text));
    expect(errors, 'no console errors').toEqual([]);
  });
}

// init() never rejects and never leaves the page worse off, whatever the page hands it.
const INIT_CASES = [
  {
    name: 'an options object whose getters throw',
    setup: `window.__opts = new Proxy({}, { get() { throw new Error('hostile options'); } });`,
    measured: false,
    warn: /measurement disabled: init failed/,
  },
  { name: 'a collector that is not a URL', setup: `window.__opts = { collector: 'http://[bad' };`, measured: true, warn: /ignoring bad option collector/ },
  // Matched in the core, which has no RegExp: strings only, said once, the rest kept.
  { name: 'a models rule that matches by RegExp', setup: `window.__opts = { models: [{ match: /chat/, model: 'gpt-4o' }] };`, measured: true, warn: /ignoring bad option models/ },
  {
    name: 'a window.fetch that cannot be replaced',
    setup: `Object.defineProperty(window, 'fetch', { value: window.fetch, writable: false, configurable: false });`,
    measured: false,
    warn: /measurement disabled: init failed/,
  },
  {
    name: 'a window.EventSource that is not a class',
    setup: `{ const ES = window.EventSource; window.EventSource = (...a) => new ES(...a); }`,
    measured: true,
    warn: /EventSource not measured/,
  },
];

for (const c of INIT_CASES) {
  test(`init() with ${c.name}: resolves, the page keeps working, one true warning`, async ({ page }) => {
    const uncaught = [];
    const console = [];
    page.on('pageerror', (e) => uncaught.push(String(e)));
    page.on('console', (m) => console.push({ type: m.type(), text: m.text() }));
    await page.goto(`${ORIGIN()}/blank.html`);
    await page.waitForFunction(() => window.llmRum !== undefined);
    const id = testId('init-case');
    const out = await page.evaluate(
      async ({ setup, id }) => {
        const h = await import('/helpers.js');
        window.__opts = {};
        (0, eval)(setup);
        const rum = await window.llmRum.init(window.__opts);
        await rum.ready;
        const res = await fetch(`/v1/stream?tokens=10&gap_ms=2&test_id=${id}`);
        const { bytes } = await h.readAll(res);
        await new Promise((r) => setTimeout(r, 300));
        await rum.shutdown();
        return { active: rum.active, fnv: h.fnv1a64(bytes), fetchIsNative: window.fetch === window.__native };
      },
      { setup: c.setup, id },
    );
    const t = await truth(id);
    expect(out.fnv).toBe(t.body_fnv1a64);
    expect(out.active).toBe(c.measured);
    expect(out.fetchIsNative, 'after shutdown (or a failed init) the native fetch').toBe(true);
    expect(uncaught).toEqual([]);
    const ours = console.filter((m) => m.text.startsWith('llm-rum:'));
    expect(ours.length, JSON.stringify(ours)).toBe(1);
    expect(ours[0].text).toMatch(c.warn);
  });
}
