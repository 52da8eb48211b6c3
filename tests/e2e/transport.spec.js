// The beacon transport, observed at the network: every beacon the page sends to the
// collector URL is intercepted (page.route sees fetch and sendBeacon alike) and answered as
// each test scripts it. The real collector process is exercised in collector.spec.js.
import { test, expect } from '@playwright/test';
import { testId, truth, openPage, setVisibility } from './util.js';

/**
 * Intercepts beacons to /rum; `answer(n)` → status for the n-th (default 204). Routed on
 * the browser context: a page-level route misses beacons sent while the page unloads.
 */
async function collect(page, answer = () => ({ status: 204 })) {
  const beacons = [];
  await page.context().route('**/rum', async (route) => {
    const req = route.request();
    const body = req.postData() || '';
    const b = { at: Date.now(), type: req.resourceType(), contentType: req.headers()['content-type'], size: body.length, body: JSON.parse(body) };
    beacons.push(b);
    const a = answer(beacons.length);
    await route.fulfill({ status: a.status, headers: a.headers || {}, body: '' });
  });
  return beacons;
}

const records = (beacons) => beacons.flatMap((b) => b.body.records);

async function until(cond, ms = 10_000) {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Streams one answer through the patched fetch; returns the record and the answer text. */
const stream = (page, query, prompt = 'hi') =>
  page.evaluate(
    async ({ query, prompt }) => {
      const h = await import('/helpers.js');
      const res = await fetch(`/v1/chat/completions?${query}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'default', stream: true, messages: [{ role: 'user', content: prompt }] }),
      });
      const { bytes } = await h.readAll(res);
      const text = new TextDecoder()
        .decode(bytes)
        .split('\n')
        .filter((l) => l.startsWith('data: {'))
        .map((l) => JSON.parse(l.slice(6)).choices?.[0]?.delta?.content || '')
        .join('');
      const rid = res.headers.get('x-request-id');
      return { rec: await h.waitRecord((r) => r.correlation['x-request-id'] === rid), text };
    },
    { query, prompt },
  );

const start = (page, opts = {}) => page.evaluate(async (opts) => (await import('/helpers.js')).startRum({ collector: '/rum', ...opts }), opts);

test('records arrive as a v1 text/plain beacon, with no prompt or answer text in it', async ({ page }) => {
  const beacons = await collect(page);
  await openPage(page);
  await start(page);
  const prompt = 'zebra quantum marmalade';
  const { rec, text } = await stream(page, 'tokens=60&gap_ms=2', prompt);
  await until(() => beacons.length >= 1);
  const [b] = beacons;
  expect(b.type).toBe('fetch');
  expect(b.contentType).toBe('text/plain;charset=UTF-8');
  expect(b.body).toMatchObject({ v: 1, sdk: 'llm-rum/0.1.0', page: '/blank.html', reason: 'timer', dropped: 0 });
  expect(b.body.session).toMatch(/^[0-9a-f]{16}$/);
  // sentAt: the send time in whole epoch ms on the records' clock (one machine here: within
  // a second of when the route saw it).
  expect(Number.isInteger(b.body.sentAt)).toBe(true);
  expect(b.body.sentAt).toBeGreaterThanOrEqual(Math.floor(rec.startEpochMs));
  expect(Math.abs(b.at - b.body.sentAt)).toBeLessThan(1000);
  expect(b.body.records).toHaveLength(1);
  expect(b.body.records[0]).toEqual(rec);
  // Privacy: no word of the prompt or of the streamed answer appears in any beacon.
  // Compared against string *values* only: key names such as "firstToken" are schema.
  const values = [];
  const walk = (v) => (typeof v === 'string' ? values.push(v.toLowerCase()) : v && typeof v === 'object' && Object.values(v).forEach(walk));
  beacons.forEach((x) => walk(x.body));
  const words = [...new Set((text + ' ' + prompt).toLowerCase().match(/\p{L}{4,}/gu))];
  expect(words.length).toBeGreaterThan(10);
  for (const w of words) expect(values.some((v) => v.includes(w)), w).toBe(false);
});

test('500 then 503 with Retry-After then 204: retried with backoff, each record delivered', async ({ page }) => {
  const beacons = await collect(page, (n) => (n === 1 ? { status: 500 } : n === 2 ? { status: 503, headers: { 'retry-after': '2' } } : { status: 204 }));
  await openPage(page);
  await start(page);
  const { rec } = await stream(page, 'tokens=3&gap_ms=1');
  await until(() => beacons.length >= 3, 15_000);
  await new Promise((r) => setTimeout(r, 1500));
  expect(beacons).toHaveLength(3); // nothing more after the success
  for (const b of beacons) expect(b.body.records.map((r) => r.id)).toEqual([rec.id]);
  const gap1 = beacons[1].at - beacons[0].at;
  const gap2 = beacons[2].at - beacons[1].at;
  expect(gap1).toBeGreaterThanOrEqual(450); // 1 s backoff, jittered to ≥ 50 %
  expect(gap1).toBeLessThan(1600);
  expect(gap2).toBeGreaterThanOrEqual(1950); // Retry-After: 2 wins over the 2nd backoff
  // Each attempt carries its own send time (the collector's skew estimate needs it).
  for (const b of beacons) expect(Math.abs(b.at - b.body.sentAt)).toBeLessThan(1000);
  expect(beacons[2].body.sentAt - beacons[0].body.sentAt).toBeGreaterThanOrEqual(gap1 + gap2 - 100);
});

test('hidden mid-stream: a partial record goes out by sendBeacon, the completed one supersedes it', async ({ page }) => {
  const beacons = await collect(page);
  await openPage(page);
  await start(page);
  const done = stream(page, 'prefill_ms=50&gap_ms=30&tokens=60');
  await new Promise((r) => setTimeout(r, 700));
  await setVisibility(page, 'hidden');
  await until(() => beacons.length >= 1);
  const partial = beacons[0];
  expect(partial.type).toBe('ping'); // sendBeacon
  expect(partial.body.reason).toBe('hidden');
  const p = partial.body.records[0];
  expect(p.outcome).toBe('partial');
  expect(p.hidden).toBe(true);
  expect(p.ttft).toBeGreaterThan(0);
  await setVisibility(page, 'visible');
  const { rec } = await done;
  await until(() => records(beacons).some((r) => r.outcome === 'ok'));
  const final = records(beacons).find((r) => r.outcome === 'ok');
  expect(final.id).toBe(p.id);
  expect(final).toEqual(rec);
  expect(final.marks.end).toBeGreaterThan(p.marks.end);
});

test('offline holds the queue; the online event flushes it', async ({ page, context }) => {
  const beacons = await collect(page);
  await openPage(page);
  await start(page);
  await stream(page, 'tokens=3&gap_ms=1');
  await context.setOffline(true);
  await new Promise((r) => setTimeout(r, 1800)); // past the 1 s flush delay
  expect(beacons).toHaveLength(0);
  await context.setOffline(false);
  await until(() => beacons.length >= 1);
  expect(beacons[0].body.reason).toBe('online');
});

test('urgent flush: payloads the browser refuses are split smaller; what it still refuses is persisted and sent by the next page', async ({ page }) => {
  const beacons = await collect(page);
  await openPage(page);
  // `match`: measure the app's 404s too, so records with long paths are quick to make.
  await start(page, { match: '/v1/' });
  // Emulated offline: normal flushes hold, so the records are still queued at pagehide.
  const make = (n, tag) =>
    page.evaluate(
      async ({ n, tag }) => {
        Object.defineProperty(navigator, 'onLine', { value: false, configurable: true });
        const long = tag.repeat(900); // ~2 KB records (the path is kept; queries are stripped)
        const before = window.__records.length;
        await Promise.all(Array.from({ length: n }, (_, i) => fetch(`/v1/nope/${long}${i}`).then((r) => r.text())));
        // Records as delivered (auto mode holds an unrendered answer's up to 3 quiet frames).
        await (await import('/helpers.js')).waitRecord((r, i) => i >= before + n - 1);
        return window.__records.slice(before).map((r) => r.id);
      },
      { n, tag },
    );
  const realBeacon = await page.evaluateHandle(() => navigator.sendBeacon.bind(navigator));
  const pagehide = (limit) =>
    page.evaluate(([limit, real]) => {
      // As when the 64 KiB keepalive quota is in use: bigger payloads are refused.
      navigator.sendBeacon = (u, d) => d.length <= limit && real(u, d);
      window.dispatchEvent(new PageTransitionEvent('pagehide', { persisted: false }));
    }, [limit, realBeacon]);

  const ids = await make(80, 'p');
  expect(ids).toHaveLength(80);
  await pagehide(20_000);
  // Payloads over the allowance were refused and re-cut smaller; Chromium's own keepalive
  // quota (64 KiB in flight, and these beacons stay in flight while intercepted) refuses
  // more, and what is left is persisted for the next page.
  const persisted = (await page.evaluate(() => localStorage.getItem('llm-rum:queue'))) || '';
  // What it persisted: one record per line, its id, a tab, its JSON (deliver/queue.js drain).
  const kept = persisted.split('\n').filter(Boolean).map((l) => {
    const [id, json] = l.split('\t');
    expect(JSON.parse(json).id).toBe(id);
    return id;
  });
  // Each payload sendBeacon accepted is a request of its own and reaches the route in its own
  // time: wait for all of them (the first alone left the others' records uncounted once, in a
  // clean-clone CI run), not a fixed while.
  const sent = () => new Set(records(beacons).map((r) => r.id));
  await until(() => sent().size + kept.length >= 80);
  for (const b of beacons) {
    expect(b.type).toBe('ping');
    expect(b.body.reason).toBe('pagehide');
    expect(b.size).toBeLessThanOrEqual(20_000);
  }
  const sentNow = sent();
  // Sent or kept, never both (a record sent and also kept would be delivered twice).
  for (const id of kept) expect(sentNow.has(id), id).toBe(false);
  expect(sentNow.size + kept.length).toBe(80);
  for (const id of ids) expect(sentNow.has(id) || kept.includes(id), id).toBe(true);

  // Everything refused (e.g. sendBeacon unavailable): all persisted; the next load sends it.
  const more = await make(10, 'q');
  await pagehide(0);
  const before = beacons.length;
  await page.goto(`${process.env.RUM_ORIGIN}/blank.html?again`);
  await page.waitForFunction(() => window.llmRum !== undefined);
  await start(page, { match: '/v1/' });
  await until(() => new Set(records(beacons).map((r) => r.id)).size >= 90);
  const restored = beacons.slice(before);
  expect(restored[0].body.reason).toBe('restore');
  const all = new Set(records(beacons).map((r) => r.id));
  for (const id of [...ids, ...more]) expect(all.has(id), id).toBe(true);
  expect(await page.evaluate(() => localStorage.getItem('llm-rum:queue'))).toBeNull();
});

test('sampling is decided once per tab session and matches the traceparent flag', async ({ page }) => {
  const beacons = await collect(page);
  await openPage(page);
  await page.evaluate(() => sessionStorage.removeItem('llm-rum:session'));
  await start(page, { sampleRate: 0 });
  const id = testId('unsampled');
  await page.evaluate(async (id) => {
    const res = await fetch(`/v1/stream?tokens=3&gap_ms=1&test_id=${id}`);
    await res.text();
    await new Promise((r) => setTimeout(r, 1500));
  }, id);
  expect(beacons).toHaveLength(0);
  expect(await page.evaluate(() => window.__records.length)).toBe(0);
  expect((await truth(id)).traceparent).toMatch(/-00$/);
  // The same tab session keeps the decision even when the page asks for 100 %.
  await page.reload();
  await page.waitForFunction(() => window.llmRum !== undefined);
  await start(page, { sampleRate: 1 });
  const id2 = testId('still-unsampled');
  await page.evaluate(async (id) => (await fetch(`/v1/stream?tokens=3&gap_ms=1&test_id=${id}`)).text(), id2);
  expect((await truth(id2)).traceparent).toMatch(/-00$/);
});
