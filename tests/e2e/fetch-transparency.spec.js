// The wrapped fetch must behave exactly like the native one: same bytes, status, headers,
// errors (same objects where the platform allows), aborts, cancellation reaching the server,
// backpressure, Request inputs, untouched non-stream responses, and fail-open.
import { test, expect } from '@playwright/test';
import { ORIGIN, testId, truth, openPage } from './util.js';

test.beforeEach(async ({ page }) => {
  page.__errors = await openPage(page);
  await page.evaluate(async () => {
    window.__native = window.fetch;
    await (await import('/helpers.js')).startRum({ match: (url) => !url.includes('/dist/') });
  });
});
test.afterEach(async ({ page }) => {
  expect(page.__errors, 'no uncaught errors in the page').toEqual([]);
});

test('bytes are identical to what the server sent, for binary and SSE bodies', async ({ page }) => {
  const ids = [testId('bytes'), testId('sse')];
  const out = await page.evaluate(async (ids) => {
    const h = await import('/helpers.js');
    const bin = await h.readAll(await fetch(`/bytes?size=300000&chunk=7000&gap_ms=1&test_id=${ids[0]}`));
    const sse = await h.readAll(await fetch(`/v1/stream?tokens=50&gap_ms=2&split=1&test_id=${ids[1]}`));
    const nat = await h.readAll(await window.__native(`/bytes?size=300000&chunk=7000&gap_ms=1`));
    await h.waitRecord((r, i) => i >= 1); // delivered (auto mode may hold the last briefly)
    return { bin: h.fnv1a64(bin.bytes), binN: bin.bytes.length, sse: h.fnv1a64(sse.bytes), nat: h.fnv1a64(nat.bytes), records: window.__records.length };
  }, ids);
  const [tb, ts] = [await truth(ids[0]), await truth(ids[1])];
  expect(out.binN).toBe(300000);
  expect(out.bin).toBe(tb.body_fnv1a64);
  expect(out.bin).toBe(out.nat);
  expect(out.sse).toBe(ts.body_fnv1a64);
  expect(out.records).toBeGreaterThanOrEqual(2);
});

test('status, statusText, headers, url, redirected and type match the native response (and clone())', async ({ page }) => {
  const out = await page.evaluate(async () => {
    const h = await import('/helpers.js');
    const desc = async (res) => ({
      status: res.status,
      statusText: res.statusText,
      ok: res.ok,
      url: res.url,
      redirected: res.redirected,
      type: res.type,
      headers: [...res.headers].filter(([k]) => !['date', 'x-request-id', 'server-timing'].includes(k)),
      isResponse: res instanceof Response,
      ownKeys: Object.keys(res),
      body: new TextDecoder().decode((await h.readAll(res)).bytes).replace(/"(id|created)":"?[^,"]*"?/g, ''),
    });
    const urls = ['/v1/chat/completions?status=429', '/redirect?to=%2Fv1%2Fstream%3Ftokens%3D3%26gap_ms%3D1'];
    const out = [];
    for (const u of urls) {
      const init = { method: u.startsWith('/v1/chat') ? 'POST' : 'GET', body: u.startsWith('/v1/chat') ? '{"stream":true}' : undefined };
      const w = await fetch(u, init);
      const n = await window.__native(u, init);
      out.push({ wrapped: await desc(w), native: await desc(n), cloneW: await desc(w.clone ? (await fetch(u, init)).clone() : w) });
    }
    return out;
  });
  for (const { wrapped, native, cloneW } of out) {
    expect(wrapped).toEqual(native);
    expect(cloneW).toEqual(native);
  }
  expect(out[0].wrapped.status).toBe(429);
  expect(out[1].wrapped.redirected).toBe(true);
  const rec = await page.evaluate(async () => (await import('/helpers.js')).waitRecord((r) => r.status === 429));
  expect(rec.outcome).toBe('error');
});

test('network errors and aborts reject exactly like native fetch', async ({ page }) => {
  const out = await page.evaluate(async () => {
    const settle = (p) => p.then((r) => ({ ok: r.status }), (e) => ({ name: e && e.name, message: String(e && e.message), e }));
    const res = {};
    // Connection refused (port 9 on loopback: nothing listens there).
    const [w1, n1] = [await settle(fetch('http://127.0.0.1:9/')), await settle(window.__native('http://127.0.0.1:9/'))];
    res.refused = [w1.name, w1.message, n1.name, n1.message];
    // Already-aborted signal, default reason and a custom reason (must be the same object).
    const c = new AbortController();
    c.abort();
    const [w2, n2] = [await settle(fetch('/v1/stream?tokens=3', { signal: c.signal })), await settle(window.__native('/v1/stream?tokens=3', { signal: c.signal }))];
    res.aborted = [w2.name, w2.message, n2.name, n2.message];
    const reason = new Error('my reason');
    const c2 = new AbortController();
    c2.abort(reason);
    const w3 = await settle(fetch('/v1/stream?tokens=3', { signal: c2.signal }));
    res.sameReason = w3.e === reason;
    // Invalid arguments: same TypeError.
    const [w4, n4] = [await settle(fetch('/v1/stream', { method: 'GET', body: 'x' })), await settle(window.__native('/v1/stream', { method: 'GET', body: 'x' }))];
    res.invalid = [w4.name, w4.message, n4.name, n4.message];
    return res;
  });
  expect(out.refused[0]).toBe('TypeError');
  expect(out.refused.slice(0, 2)).toEqual(out.refused.slice(2));
  expect(out.aborted[0]).toBe('AbortError');
  expect(out.aborted.slice(0, 2)).toEqual(out.aborted.slice(2));
  expect(out.sameReason).toBe(true);
  expect(out.invalid[0]).toBe('TypeError');
  expect(out.invalid.slice(0, 2)).toEqual(out.invalid.slice(2));
});

// Abort and cancel: the same app code as every engine runs (pages/scenarios.js).
test('abort during the stream: the read rejects with AbortError, the server sees the disconnect, record says aborted', async ({ page }) => {
  const id = testId('abort-mid');
  const out = await page.evaluate((id) => window.__scenario('abort', { id, times: 1 }).then(JSON.parse), id);
  expect(out).toEqual(['AbortError aborted']);
  const t = await truth(`${id}-0`);
  expect(t.client_gone_at_ms).not.toBeNull();
  expect(t.content_tokens).toBeLessThan(200);
});

test('reader.cancel() reaches the server; record says aborted', async ({ page }) => {
  const id = testId('cancel');
  const out = await page.evaluate((id) => window.__scenario('cancel', { id }).then(JSON.parse), id);
  expect(out.outcome).toBe('aborted');
  const t = await truth(id);
  expect(t.client_gone_at_ms).not.toBeNull();
  // The cancel went through: the server stopped long before 200 tokens × 20 ms.
  expect(t.client_gone_at_ms).toBeLessThan(2000);
});

test('a slow reader keeps backpressure: the wrapper never reads ahead of the app', async ({ page }) => {
  const id = testId('slow');
  const out = await page.evaluate((id) => window.__scenario('slowReader', { id }).then(JSON.parse), id);
  const t = await truth(id);
  // Plenty was available to read ahead...
  expect(t.body_bytes).toBeGreaterThan(2 * 1024 * 1024);
  // ...but the wrapper passed on only what the app pulled (it reads its source on demand,
  // highWaterMark 0): one chunk, not everything as tee()+drain would.
  expect(out.chunks).toBe(1);
  expect(out.bytes).toBe(out.firstLen);
  expect(out.outcome).toBe('aborted');
});

test('Request objects: headers merge per the Fetch spec, the app\'s traceparent is respected', async ({ page }) => {
  const ids = [testId('req'), testId('req-init'), testId('req-init-2'), testId('own-tp')];
  const own = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const out = await page.evaluate(
    async ({ ids, own }) => {
      const h = await import('/helpers.js');
      const body = JSON.stringify({ model: 'default', stream: true, messages: [] });
      const read = async (p) => h.readAll(await p);
      await read(fetch(new Request('/v1/chat/completions?tokens=3&gap_ms=1', { method: 'POST', headers: { 'x-test-id': ids[0], 'content-type': 'application/json' }, body })));
      // init.headers replaces the Request's headers (Fetch: new Request(input, init)).
      await read(fetch(new Request('/v1/chat/completions?tokens=3&gap_ms=1', { method: 'POST', headers: { 'x-test-id': 'lost' }, body }), { headers: { 'x-test-id': ids[1] } }));
      await read(fetch(`/v1/stream?tokens=3&gap_ms=1&test_id=${ids[2]}`, { headers: new Headers({ 'x-extra': '1' }) }));
      await read(fetch(`/v1/stream?tokens=3&gap_ms=1&test_id=${ids[3]}`, { headers: { traceparent: own } }));
      return h.waitRecord((r) => r.traceId === own.slice(3, 35));
    },
    { ids, own },
  );
  const [t0, t1, t2, t3] = await Promise.all(ids.map((i) => truth(i)));
  expect(t0.method).toBe('POST');
  expect(t0.traceparent).toMatch(/^00-/);
  expect(t1.test_id).toBe(ids[1]);
  expect(t1.traceparent).toMatch(/^00-/);
  expect(t2.traceparent).toMatch(/^00-/);
  expect(t3.traceparent).toBe(own);
  expect(out.traceSource).toBe('app');
  expect(out.spanId).toBe('00f067aa0ba902b7');
});

test('non-stream responses are returned untouched (compileStreaming brand checks work)', async ({ page }) => {
  const out = await page.evaluate(async () => {
    // The default mode: no `match`, so only stream content types are instrumented.
    await window.__rum.shutdown();
    await (await import('/helpers.js')).startRum({});
    const mod = await WebAssembly.compileStreaming(fetch('/dist/wasm/llm_rum_bg.wasm'));
    const res = await fetch('/plain?status=200');
    const text = await res.text();
    await new Promise((r) => setTimeout(r, 50));
    return { isModule: mod instanceof WebAssembly.Module, text: text.length > 0, records: window.__records.length };
  });
  expect(out.isModule).toBe(true);
  expect(out.text).toBe(true);
  expect(out.records).toBe(0);
});

test('fail-open: a wasm that does not load leaves the native fetch; a failing core mid-stream does not break the stream', async ({ page }) => {
  // A fresh document: the wasm module instance is per page, and must not be loaded yet.
  const freshErrors = await openPage(page);
  const out = await page.evaluate(async () => {
    const h = await import('/helpers.js');
    window.__native = window.fetch;
    const warnings = [];
    const warn = console.warn;
    console.warn = (...a) => warnings.push(a.join(' '));
    const core = h.hookCoreExports();
    const broken = await window.llmRum.init({ wasmUrl: '/nope.wasm' });
    await broken.ready;
    const ok = (await broken.fetch('/plain?status=200')).status;
    const nativeKept = window.fetch === window.__native;
    // A core that throws on every chunk: the first failure disables measurement; the app's
    // stream still gets every byte.
    const rum = await window.llmRum.init({ onRecord: () => { throw new Error('app callback bug'); } });
    await rum.ready;
    const chunk = core.core_chunk;
    core.core_chunk = () => {
      throw new Error('simulated core failure');
    };
    const got = await h.readAll(await fetch('/v1/stream?tokens=20&gap_ms=1'));
    const nat = await h.readAll(await window.__native('/v1/stream?tokens=20&gap_ms=1'));
    core.core_chunk = chunk;
    const after = await h.readAll(await fetch('/v1/stream?tokens=5&gap_ms=1'));
    await rum.shutdown();
    console.warn = warn;
    return { ok, nativeKept, active: broken.active, sameLen: got.bytes.length === nat.bytes.length, afterLen: after.bytes.length, disabled: !rum.active, warnings };
  });
  expect(out.ok).toBe(200);
  expect(out.nativeKept).toBe(true);
  expect(out.active).toBe(false);
  expect(out.sameLen).toBe(true);
  expect(out.afterLen).toBeGreaterThan(0);
  expect(out.disabled).toBe(true);
  expect(out.warnings.length).toBeGreaterThanOrEqual(2);
  expect(freshErrors).toEqual([]);
});

test('a throwing onRecord is contained; the SDK never measures its own collector', async ({ page }) => {
  const out = await page.evaluate(async () => {
    const h = await import('/helpers.js');
    await window.__rum.shutdown();
    let calls = 0;
    const rum = await window.llmRum.init({
      collector: '/rum',
      match: () => true,
      onRecord: () => {
        calls++;
        throw new Error('app bug');
      },
    });
    const got = await h.readAll(await fetch('/v1/stream?tokens=5&gap_ms=1'));
    await fetch('/rum', { method: 'POST', body: '{}' }).catch(() => null);
    await new Promise((r) => setTimeout(r, 100));
    await rum.shutdown();
    return { calls, len: got.bytes.length, active: rum.active };
  });
  expect(out.len).toBeGreaterThan(0);
  expect(out.calls).toBe(1);
  expect(out.active).toBe(true);
});

test("duplex: 'half' stream request bodies behave as with native fetch", async ({ page }) => {
  const out = await page.evaluate(async () => {
    const body = () =>
      new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode('{"stream":true}'));
          c.close();
        },
      });
    const settle = (p) => p.then(async (r) => ({ status: r.status, len: (await r.arrayBuffer()).byteLength > 0 }), (e) => ({ name: e.name, message: e.message }));
    const init = () => ({ method: 'POST', body: body(), duplex: 'half', headers: { 'content-type': 'application/json' } });
    const url = '/v1/chat/completions?tokens=3&gap_ms=1';
    // Missing duplex: both must throw the same TypeError.
    const noDuplex = () => ({ method: 'POST', body: body() });
    return {
      wrapped: await settle(fetch(url, init())),
      native: await settle(window.__native(url, init())),
      wrappedNoDuplex: await settle(fetch(url, noDuplex())),
      nativeNoDuplex: await settle(window.__native(url, noDuplex())),
    };
  });
  // Chromium streams request bodies only over HTTP/2+, so on this HTTP/1.1 server both
  // reject; what matters is that the wrapper answers exactly like native fetch.
  expect(out.wrapped).toEqual(out.native);
  expect(out.wrappedNoDuplex).toEqual(out.nativeNoDuplex);
  expect(out.nativeNoDuplex.name).toBe('TypeError');
});

test('BYOB readers work on the wrapped body, like on the native byte stream', async ({ page }) => {
  const id = testId('byob');
  // The same app code as every engine runs (pages/scenarios.js `byob`).
  const out = await page.evaluate((id) => window.__scenario('byob', { id }).then(JSON.parse), id);
  const t = await truth(id);
  expect(out.nativeByob).toBe(true);
  expect(out.fnv).toBe(t.body_fnv1a64);
  expect(out.outcome).toBe('ok');
  const rec = await page.evaluate(() => window.__records.find((r) => r.url.endsWith('/v1/stream')));
  expect(rec.outputTokens).toBe(t.content_tokens);
});
