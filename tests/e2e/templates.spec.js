// Ids never leave the page (issue 18). A chat page at /c/<conversation uuid> streams from
// /v1/threads/<thread id>/chat/completions on the real scripted server: no id appears in any
// record, beacon, OTLP body or in the real collector's database, and the collector groups by
// the templated route. The app's urlTemplates win over the automatic rule; beforeSend edits
// and drops records on their way out, and a hook that throws harms neither the app nor later
// records.
import { test, expect } from '@playwright/test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { ORIGIN, testId, truth, openPage, setVisibility } from './util.js';
import { startCollector } from './server.js';

const CONV = '3f6c1e2a-9b4d-4c8e-a1f0-7d2b5e9c4a61';
const THREAD = 'thread_9QxZr4kLmN2pT7vB1cD5eF8g';
const SECRET = 'zebra-quantum-marmalade'; // in the page's query string: never recorded either
const LEAKS = [CONV, THREAD, '9QxZr4kLmN2pT7vB1cD5eF8g', SECRET];

/**
 * The chat page at /c/<uuid>?q=…: the test page, moved there by the History API the way
 * single-page chat apps (ChatGPT, Claude) move between conversations. (Serving it at that
 * path through page.route would keep request interception on, which stalls keepalive
 * beacons to the real collector.)
 */
async function openChat(page) {
  await openPage(page);
  await page.evaluate((to) => history.replaceState(null, '', to), `/c/${CONV}?q=${SECRET}`);
  expect(new URL(page.url()).pathname).toBe(`/c/${CONV}`);
}

/**
 * Streams one answer from `path` through the patched fetch, as the app would, and waits for
 * its record: records are final when delivered, and auto mode (the default) holds the record of
 * an answer it did not find on the page for up to 3 quiet frames after the body ends.
 */
const ask = (page, p, id = testId('tpl')) =>
  page.evaluate(
    async ({ p, id }) => {
      const h = await import('/helpers.js');
      const before = window.__records.length;
      const res = await fetch(p, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-test-id': id },
        body: JSON.stringify({ model: 'default', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      });
      const { bytes } = await h.readAll(res);
      await h.waitRecord((r, i) => i >= before);
      return { status: res.status, chars: h.openAiChars(bytes), hash: h.fnv1a64(bytes) };
    },
    { p, id },
  );

const threadPath = (q = 'tokens=5&gap_ms=2') => `/v1/threads/${THREAD}/chat/completions?conversation=${CONV}&${q}`;

function noLeak(text, where) {
  for (const s of LEAKS) expect(text.includes(s), `${where} contains ${s}`).toBe(false);
}

async function until(cond, ms = 15_000) {
  const t0 = Date.now();
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Beacons to /rum, intercepted and answered 204 (the v1 JSON bodies, parsed). */
async function collect(page) {
  const beacons = [];
  await page.context().route('**/rum', async (route) => {
    const body = route.request().postData() || '';
    beacons.push({ text: body, body: JSON.parse(body), type: route.request().resourceType() });
    await route.fulfill({ status: 204, body: '' });
  });
  return beacons;
}

test('no id leaves the page: records, beacons and the real collector see /v1/threads/:id/… from /c/:id', async ({ page }) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llm-rum-templates-'));
  const c = await startCollector(['--db', path.join(dir, 'rum.db'), '--allow-origin', ORIGIN(), '--rate-limit', '0']);
  try {
    // Watched, not intercepted: the beacons go to the real collector untouched.
    const sent = [];
    page.on('request', (req) => req.url() === `${c.origins[0]}/v1/rum` && sent.push(req.postData() || ''));
    await openChat(page);
    await page.evaluate(async (url) => (await import('/helpers.js')).startRum({ collector: url }), `${c.origins[0]}/v1/rum`);
    const id = testId('tpl-thread');
    const answer = await ask(page, threadPath(), id);
    expect(answer.status).toBe(200);
    // The server really was asked at the id-bearing path (the test is not vacuous).
    expect((await truth(id)).path).toBe(`/v1/threads/${THREAD}/chat/completions`);
    await ask(page, '/v1/chat/completions?tokens=3&gap_ms=2');
    const records = await page.evaluate(() => window.__records);
    expect(records.map((r) => r.url)).toEqual([`${ORIGIN()}/v1/threads/:id/chat/completions`, `${ORIGIN()}/v1/chat/completions`]);
    noLeak(JSON.stringify(records), 'onRecord records');

    // The collector groups by the templated route.
    const route = encodeURIComponent('/v1/threads/:id/chat/completions');
    const summary = await until(async () => {
      const s = await (await fetch(`${c.origins[0]}/api/summary?route=${route}`)).json();
      return s.metrics && s.metrics.ttft.count === 1 ? s : null;
    });
    expect(summary.metrics.ttft.count).toBe(1);
    expect(sent.length).toBeGreaterThan(0);
    for (const text of sent) {
      noLeak(text, 'beacon');
      expect(JSON.parse(text).page).toBe('/c/:id');
    }
    // Nor did any reach the collector's disk (database and write-ahead log, as bytes).
    for (const f of fs.readdirSync(dir)) noLeak(fs.readFileSync(path.join(dir, f)).toString('latin1'), f);
  } finally {
    await c.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('OTLP: the template is url.template and the span name, url.full the stripped templated URL; no id in the body', async ({ page }) => {
  const bodies = [];
  await page.context().route('**/otel/v1/traces', async (route) => {
    bodies.push(route.request().postData() || '');
    await route.fulfill({ status: 200, contentType: 'application/json', body: '{}' });
  });
  await openChat(page);
  await page.evaluate(async () => (await import('/helpers.js')).startRum({ collector: '/otel/v1/traces', exporter: 'otlp' }));
  await ask(page, threadPath());
  await until(() => bodies.length > 0);
  noLeak(bodies[0], 'OTLP body');
  const r = spawnSync('.tools/venv/bin/python', ['tests/otlp_check.py'], { input: bodies[0], encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  const req = JSON.parse(r.stdout);
  const [main] = req.spans;
  expect(main.name).toBe('POST /v1/threads/:id/chat/completions');
  expect(main.attributes['url.template']).toEqual({ stringValue: '/v1/threads/:id/chat/completions' });
  expect(main.attributes['url.full']).toEqual({ stringValue: `${ORIGIN()}/v1/threads/:id/chat/completions` });
  expect(req.resource['llm_rum.page']).toEqual({ stringValue: '/c/:id' });
});

test("the app's urlTemplates win over the automatic rule; templateIds: false keeps paths as they are", async ({ page }) => {
  const beacons = await collect(page);
  await openChat(page);
  await page.evaluate(async () => {
    const h = await import('/helpers.js');
    await h.startRum({
      collector: '/rum',
      urlTemplates: [
        { match: /\/v1\/threads\/[^/]+\/chat\/completions/, template: '/v1/threads/:thread/chat/completions' },
        { match: '/c/', template: '/c/:conversation' },
        { match: /\/v1\/stream\?.*tokens=3/, template: '/v1/stream/:short' },
      ],
    });
  });
  await ask(page, threadPath());
  await ask(page, '/v1/chat/completions?tokens=3&gap_ms=2'); // no template matches: the automatic rule
  // EventSource records take the same path (the template is matched on the absolute URL).
  await page.evaluate(async () => (await import('/helpers.js')).esStream('/v1/stream?tokens=3&gap_ms=2'));
  const urls = await page.evaluate(() => window.__records.map((r) => r.url));
  expect(urls).toEqual([`${ORIGIN()}/v1/threads/:thread/chat/completions`, `${ORIGIN()}/v1/chat/completions`, `${ORIGIN()}/v1/stream/:short`]);
  await until(() => beacons.flatMap((b) => b.body.records).length >= 3);
  expect(beacons[0].body.page).toBe('/c/:conversation');
  for (const b of beacons) noLeak(b.text, 'beacon');

  // Off: the path as it is (the query is still stripped: that is stripQuery's).
  await page.evaluate(async () => {
    await window.__rum.shutdown();
    const h = await import('/helpers.js');
    await h.startRum({ collector: '/rum', templateIds: false });
  });
  await ask(page, threadPath());
  const raw = await page.evaluate(() => window.__records[0].url);
  expect(raw).toBe(`${ORIGIN()}/v1/threads/${THREAD}/chat/completions`);
  await until(() => beacons.some((b) => b.body.page === `/c/${CONV}`));
});

test('beforeSend rewrites and drops records; one that throws or returns a Promise harms neither the app nor later records', async ({ page }) => {
  const beacons = await collect(page);
  const warnings = [];
  page.on('console', (m) => m.type() === 'warning' && warnings.push(m.text()));
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  await openChat(page);
  await page.evaluate(async () => {
    const h = await import('/helpers.js');
    let n = 0;
    await h.startRum({
      collector: '/rum',
      beforeSend(r) {
        n += 1;
        window.__hookSaw = (window.__hookSaw || []).concat(r.id);
        if (n === 1) return { ...r, correlation: {}, tenant: 'acme' }; // rewrite
        if (n === 2) return false; // drop
        if (n === 3) throw new Error('hook bug'); // contained: this record is dropped
        if (n === 4) {
          r.edited = true; // edited in place, nothing returned: sent as edited
          return undefined;
        }
        if (n === 5) return Promise.resolve(r); // not awaited: dropped
        return r;
      },
    });
  });
  const answers = [];
  for (let i = 1; i <= 6; i++) answers.push(await ask(page, `/v1/chat/completions?tokens=${i + 2}&gap_ms=2`));
  // The app got every answer whole, after the hook threw too.
  expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
  expect(answers.map((a) => a.chars > 0)).toEqual([true, true, true, true, true, true]);
  const state = await page.evaluate(() => ({ records: window.__records, active: window.__rum.active, hookSaw: window.__hookSaw }));
  expect(state.active).toBe(true);
  // onRecord came first and saw every record as measured.
  expect(state.records).toHaveLength(6);
  expect(state.hookSaw).toEqual(state.records.map((r) => r.id));
  for (const r of state.records) {
    expect(r.tenant).toBeUndefined();
    expect(Object.keys(r.correlation).length).toBeGreaterThan(0);
  }
  const ids = state.records.map((r) => r.id);
  await until(() => beacons.flatMap((b) => b.body.records).length >= 3);
  await page.evaluate(() => window.__rum.flush());
  const sent = beacons.flatMap((b) => b.body.records);
  expect(sent.map((r) => r.id)).toEqual([ids[0], ids[3], ids[5]]);
  expect(sent[0].tenant).toBe('acme');
  expect(sent[0].correlation).toEqual({});
  expect(sent[1].edited).toBe(true);
  expect(sent[2]).toEqual(state.records[5]);
  // One warning for the failing hook (reported once), nothing thrown into the page.
  expect(warnings.filter((w) => w.includes('beforeSend'))).toHaveLength(1);
  expect(errors).toEqual([]);
});

test('a partial record on page hide goes through beforeSend too', async ({ page }) => {
  const beacons = await collect(page);
  await openChat(page);
  await page.evaluate(async () => {
    const h = await import('/helpers.js');
    await h.startRum({ collector: '/rum', beforeSend: (r) => ({ ...r, seenByHook: r.outcome }) });
  });
  const done = ask(page, '/v1/chat/completions?prefill_ms=50&gap_ms=30&tokens=60');
  await new Promise((r) => setTimeout(r, 700));
  await setVisibility(page, 'hidden');
  await until(() => beacons.length >= 1);
  expect(beacons[0].type).toBe('ping'); // sendBeacon, right after the hook ran
  expect(beacons[0].body.records[0]).toMatchObject({ outcome: 'partial', seenByHook: 'partial' });
  await setVisibility(page, 'visible');
  await done;
  await until(() => beacons.flatMap((b) => b.body.records).some((r) => r.outcome === 'ok'));
  const final = beacons.flatMap((b) => b.body.records).find((r) => r.outcome === 'ok');
  expect(final.seenByHook).toBe('ok');
  expect(final.id).toBe(beacons[0].body.records[0].id);
});
