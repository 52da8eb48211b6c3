// The SDK against the real collector process: records arrive and are stored once, a page
// that navigates away mid-stream still delivers its partial record, and a collector that is
// down then up again receives the queued records exactly once (retry with backoff).
import { test, expect } from '@playwright/test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ORIGIN, openPage } from './util.js';
import { startCollector } from './server.js';

let dir;
test.beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llm-rum-collector-'));
});
test.afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

const collector = (port = 0) => startCollector(['--listen', `127.0.0.1:${port}`, '--db', path.join(dir, 'rum.db'), '--allow-origin', ORIGIN(), '--rate-limit', '0']);
const summary = async (origin) => (await fetch(`${origin}/api/summary`)).json();
const until = async (f, ms = 15_000) => {
  const t0 = Date.now();
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
};
const outcomes = async (origin) => (await summary(origin)).outcomes || {};

const streams = (page, n, query = 'tokens=5&gap_ms=2') =>
  page.evaluate(
    async ({ n, query }) => {
      const h = await import('/helpers.js');
      // Each record as delivered: auto mode (the default) holds an unrendered answer's record
      // for up to 3 quiet frames after the body ends, in case a buffered UI shows it then.
      for (let i = 0; i < n; i++) {
        const before = window.__records.length;
        await (await fetch(`/v1/stream?${query}`)).text();
        await h.waitRecord((r, j) => j >= before);
      }
      return window.__records.map((r) => r.id);
    },
    { n, query },
  );

test('records arrive at the collector and are stored once', async ({ page }) => {
  const c = await collector();
  try {
    await openPage(page);
    await page.evaluate(async (url) => (await import('/helpers.js')).startRum({ collector: url }), `${c.origins[0]}/v1/rum`);
    const ids = await streams(page, 3);
    expect(ids).toHaveLength(3);
    const o = await until(async () => ((await outcomes(c.origins[0])).ok === 3 ? outcomes(c.origins[0]) : null));
    expect(o).toEqual({ ok: 3 });
    // The beacons carried sentAt: one clock here, so no record was out of the accepted window.
    expect((await summary(c.origins[0])).refused).toEqual({ tooOld: 0, future: 0 });
    // A retried beacon (same ids again) changes nothing.
    await page.evaluate(() => window.__rum.flush());
    expect((await summary(c.origins[0])).metrics.ttft.count).toBe(3);
  } finally {
    await c.stop();
  }
});

test('navigating away mid-stream: the partial record is stored', async ({ page }) => {
  const c = await collector();
  try {
    await openPage(page);
    await page.evaluate(async (url) => (await import('/helpers.js')).startRum({ collector: url }), `${c.origins[0]}/v1/rum`);
    page.evaluate(() => fetch('/v1/stream?prefill_ms=50&gap_ms=30&tokens=200').then((r) => r.text())).catch(() => null);
    await new Promise((r) => setTimeout(r, 700));
    await page.goto(`${ORIGIN()}/blank.html?next`);
    const o = await until(async () => ((await outcomes(c.origins[0])).partial ? outcomes(c.origins[0]) : null));
    expect(o.partial).toBe(1);
  } finally {
    await c.stop();
  }
});

test('collector down, then up: the queued records arrive once', async ({ page }) => {
  let c = await collector();
  const origin = c.origins[0];
  const port = new URL(origin).port;
  await c.stop();
  try {
    await openPage(page);
    await page.evaluate(async (url) => (await import('/helpers.js')).startRum({ collector: url }), `${origin}/v1/rum`);
    await streams(page, 4);
    // The first flush (after 1 s) fails: connection refused. Backoff holds the queue.
    await new Promise((r) => setTimeout(r, 2500));
    c = await collector(port);
    const o = await until(async () => ((await outcomes(origin)).ok >= 4 ? outcomes(origin) : null), 20_000);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await outcomes(origin)).toEqual({ ok: 4 });
    expect(o.ok).toBe(4);
  } finally {
    await c.stop();
  }
});
