// The beacon queue's policy (js/deliver/queue.js) on its own, in Node: pure, time and jitter
// passed in, so every rule is checked exactly — flush timing, payload sizes, backoff, dedupe,
// bounds, persistence. transport.spec.js and collector.spec.js check the same queue end to end
// in the browser (sendBeacon, keepalive, Retry-After, a real collector).
import { test, expect } from '@playwright/test';
import fs from 'node:fs';
import { BeaconQueue, REASONS, MAX_PAYLOAD, FLUSH_BYTES, FLUSH_DELAY_MS, MAX_QUEUE_RECORDS, MAX_QUEUE_BYTES, BACKOFF_CAP_MS, backoffMs, retryable } from '../../js/deliver/queue.js';
import * as codes from '../../js/codes.js';

const hex16 = (i) => i.toString(16).padStart(16, '0');
const rec = (i, pad) => `{"id":"${hex16(i)}","outcome":"ok","pad":"${'x'.repeat(pad)}"}`;
const ids = (payload) => JSON.parse(payload).records.map((r) => r.id);
const bytes = (s) => new TextEncoder().encode(s).length;

test('flushes after the delay, or at once past 16 KiB; the envelope is a v1 beacon', () => {
  const q = new BeaconQueue('llm-rum/0.1.0', 's1');
  expect(q.dueAt()).toBe(-1);
  q.push(hex16(1), rec(1, 10), 100);
  expect(q.dueAt()).toBe(100 + FLUSH_DELAY_MS);
  for (let i = 2; i < 40; i++) q.push(hex16(i), rec(i, 500), 200);
  expect(q.bytes).toBeGreaterThanOrEqual(FLUSH_BYTES);
  expect(q.dueAt()).toBe(100); // the size trigger: due since the first came
  const p = q.take(MAX_PAYLOAD, codes.FLUSH_TIMER, false, '/chat', 200, 1_764_000_000_200.4);
  expect(p.startsWith('{"v":1,"sdk":"llm-rum/0.1.0","session":"s1","page":"/chat","reason":"timer","dropped":0,"sentAt":1764000000200,"records":[{"id":"')).toBe(true);
  expect(ids(p)).toHaveLength(39);
  expect(q.queue).toHaveLength(0);
  expect(q.dueAt()).toBe(-1);
  // Without a clock for sentAt (negative), the member is left out.
  q.push(hex16(1), rec(1, 1), 0);
  expect(JSON.parse(q.take(MAX_PAYLOAD, codes.FLUSH_MANUAL, false, '/', 0, -1))).not.toHaveProperty('sentAt');
});

test('payloads respect the size limit in UTF-8 bytes, in order, each record once', () => {
  const q = new BeaconQueue('sdk', 's');
  for (let i = 0; i < 100; i++) q.push(hex16(i), rec(i, 2000), 0);
  const seen = [];
  for (let p; (p = q.take(MAX_PAYLOAD, codes.FLUSH_MANUAL, false, '/', 0, -1)) !== undefined; ) {
    expect(bytes(p)).toBeLessThanOrEqual(MAX_PAYLOAD);
    seen.push(...ids(p));
    q.result(q.batch, 0, 204, -1, 0);
  }
  expect(seen).toEqual([...Array(100).keys()].map(hex16));
  // Bytes, not UTF-16 units: 3000 chars of 'é' are 6000 bytes.
  q.push(hex16(7), `{"id":"${hex16(7)}","t":"${'é'.repeat(3000)}"}`, 0);
  expect(q.take(6000, codes.FLUSH_MANUAL, false, '/', 0, -1)).toBeUndefined();
  expect(ids(q.take(7000, codes.FLUSH_MANUAL, false, '/', 0, -1))).toEqual([hex16(7)]);
  // A smaller allowance (keepalive quota, refused sendBeacon) gives smaller payloads.
  q.push(hex16(1), rec(1, 2000), 0);
  q.push(hex16(2), rec(2, 2000), 0);
  expect(ids(q.take(3000, codes.FLUSH_HIDDEN, true, '/', 0, -1))).toHaveLength(1);
  expect(q.take(100, codes.FLUSH_HIDDEN, true, '/', 0, -1), 'a record larger than allowed waits').toBeUndefined();
  // A record that could never fit a payload is dropped at once, and counted.
  q.push(hex16(3), rec(3, MAX_PAYLOAD), 0);
  expect(q.dropped).toBe(1);
});

test('retries with backoff, jitter and Retry-After; urgent sends ignore the hold; capped at 60 s', () => {
  const q = new BeaconQueue('sdk', 's');
  q.push(hex16(1), rec(1, 10), 0);
  q.take(MAX_PAYLOAD, codes.FLUSH_TIMER, false, '/', 1000, -1);
  q.result(q.batch, 1000, 503, -1, 1.0);
  expect(q.queue).toHaveLength(1); // back in the queue
  expect(q.dueAt()).toBe(2000); // 1 s backoff, jitter 1.0 → 100 %
  expect(q.take(MAX_PAYLOAD, codes.FLUSH_TIMER, false, '/', 1500, -1)).toBeUndefined(); // held
  expect(q.take(MAX_PAYLOAD, codes.FLUSH_TIMER, false, '/', 2000, -1)).toBeDefined();
  q.result(q.batch, 2000, 0, -1, 0);
  expect(q.dueAt()).toBe(3000); // 2 s × the 50 % jitter floor
  q.take(MAX_PAYLOAD, codes.FLUSH_TIMER, false, '/', 3000, -1);
  q.result(q.batch, 3000, 429, 30_000, 0);
  expect(q.dueAt()).toBe(33_000); // Retry-After wins when longer
  expect(q.take(MAX_PAYLOAD, codes.FLUSH_PAGEHIDE, true, '/', 3001, -1)).toBeDefined(); // urgent
  q.result(q.batch, 0, 200, -1, 0);
  expect(q.queue).toHaveLength(0);
  expect(q.holdUntil).toBe(0);
  q.push(hex16(2), rec(2, 10), 0);
  for (let k = 0; k < 20; k++) {
    const t = 100_000 * (k + 1);
    q.take(MAX_PAYLOAD, codes.FLUSH_TIMER, false, '/', t, -1);
    q.result(q.batch, t, 500, -1, 1.0);
    expect(q.dueAt() - t).toBeLessThanOrEqual(BACKOFF_CAP_MS);
  }
  expect(backoffMs(0, 0, -1)).toBe(500);
  expect(backoffMs(30, 0.5, -1)).toBe(0.75 * BACKOFF_CAP_MS);
  expect(backoffMs(0, 0, 1e9)).toBe(10 * BACKOFF_CAP_MS); // a Retry-After is bounded too
  expect([0, 408, 429, 500, 503, 599].every(retryable)).toBe(true);
  expect([200, 204, 301, 400, 401, 404, 413, 600].some(retryable)).toBe(false);
});

test('non-retryable failures are dropped and counted in the next payload', () => {
  const q = new BeaconQueue('sdk', 's');
  q.push(hex16(1), rec(1, 10), 0);
  q.push(hex16(2), rec(2, 10), 0);
  q.take(MAX_PAYLOAD, codes.FLUSH_TIMER, false, '/', 1000, -1);
  q.result(q.batch, 1000, 400, -1, 0.5);
  expect(q.queue).toHaveLength(0);
  expect(q.dropped).toBe(2);
  q.push(hex16(3), rec(3, 10), 1000);
  expect(q.take(MAX_PAYLOAD, codes.FLUSH_TIMER, false, '/', 5000, -1)).toContain('"dropped":2,');
  expect(q.dropped).toBe(0);
  // The count a failed batch reported is not lost with it.
  q.result(q.batch, 5000, 413, -1, 0);
  expect(q.dropped).toBe(3);
  // An unknown batch (answered twice, or drained) changes nothing.
  q.result(12345, 5000, 400, -1, 0);
  expect(q.dropped).toBe(3);
});

test('the queue is bounded: the oldest go, counted', () => {
  const q = new BeaconQueue('sdk', 's');
  for (let i = 0; i < MAX_QUEUE_RECORDS + 10; i++) q.push(hex16(i), rec(i, 10), 0);
  expect(q.queue).toHaveLength(MAX_QUEUE_RECORDS);
  expect(q.dropped).toBe(10);
  expect(ids(q.take(MAX_PAYLOAD, codes.FLUSH_MANUAL, false, '/', 0, -1))[0]).toBe(hex16(10));
  const big = new BeaconQueue('sdk', 's');
  for (let i = 0; i < 2000; i++) big.push(hex16(i), rec(i, 1000), 0);
  expect(big.bytes).toBeLessThanOrEqual(MAX_QUEUE_BYTES);
  expect(big.bytes).toBe(big.queue.reduce((n, it) => n + bytes(it.json), 0));
});

test('a record with the id of a queued one replaces it; a failed batch does not bring back one superseded meanwhile', () => {
  const q = new BeaconQueue('sdk', 's');
  q.push(hex16(0xaa), `{"id":"${hex16(0xaa)}","outcome":"partial"}`, 0);
  q.push(hex16(1), rec(1, 1), 0);
  q.push(hex16(0xaa), `{"id":"${hex16(0xaa)}","outcome":"ok"}`, 0);
  let p = q.take(MAX_PAYLOAD, codes.FLUSH_MANUAL, false, '/', 0, -1);
  expect(ids(p)).toEqual([hex16(1), hex16(0xaa)]);
  expect(p).not.toContain('partial');
  q.push(hex16(0xbb), `{"id":"${hex16(0xbb)}","outcome":"partial"}`, 0);
  q.take(MAX_PAYLOAD, codes.FLUSH_HIDDEN, true, '/', 0, -1);
  q.push(hex16(0xbb), `{"id":"${hex16(0xbb)}","outcome":"ok"}`, 0);
  q.result(q.batch, 0, 0, -1, 0);
  p = q.take(MAX_PAYLOAD, codes.FLUSH_PAGEHIDE, true, '/', 0, -1);
  expect(ids(p)).toEqual([hex16(0xbb)]);
  expect(p).toContain('"ok"');
  // A record the app's beforeSend rebuilt (keys in another order, even its id): queued by the
  // id the core gave it, whatever its text says.
  q.push(hex16(5), rec(5, 1), 0);
  q.push(hex16(5), JSON.stringify({ tenant: 'acme', outcome: 'ok', id: 'scrubbed' }), 0);
  expect(JSON.parse(q.take(MAX_PAYLOAD, codes.FLUSH_PAGEHIDE, true, '/', 0, -1)).records).toEqual([{ tenant: 'acme', outcome: 'ok', id: 'scrubbed' }]);
});

test('persist and restore round trip: queued and unacknowledged records, a line cut short skipped', () => {
  const q = new BeaconQueue('sdk', 's');
  for (let i = 0; i < 5; i++) q.push(hex16(i), rec(i, 100), 0);
  q.take(700, codes.FLUSH_HIDDEN, true, '/', 0, -1); // one in flight, unacknowledged
  const text = q.drain();
  expect(text.split('\n').filter(Boolean)).toHaveLength(5);
  expect([q.queue.length, q.inFlight.size, q.bytes, q.dueAt()]).toEqual([0, 0, 0, -1]);
  const next = new BeaconQueue('sdk', 's2');
  // What the sender stores may be cut at the front (bounded storage): that line is skipped.
  next.restore(text.slice(40), 50);
  expect(next.queue).toHaveLength(4);
  next.restore(text, 50);
  next.restore('garbage\n{"x":1}\n' + hex16(9) + '\t{"cut":\n', 50);
  expect(next.queue).toHaveLength(5); // same ids replace, garbage is ignored
  expect(ids(next.take(MAX_PAYLOAD, codes.FLUSH_RESTORE, false, '/', 50, -1))).toEqual([0, 1, 2, 3, 4].map(hex16));
});

test("the envelope's members and reasons are the ones js/index.d.ts declares (`Beacon`)", () => {
  const dts = fs.readFileSync(new URL('../../js/index.d.ts', import.meta.url), 'utf8');
  const body = /export interface Beacon \{([\s\S]*?)\n\}/.exec(dts)[1].replace(/\/\*\*[\s\S]*?\*\//g, '');
  const members = [...body.matchAll(/^\s*(\w+):/gm)].map((m) => m[1]);
  const reasons = [.../reason: ([^;]+);/.exec(body)[1].matchAll(/'(\w+)'/g)].map((m) => m[1]).sort();
  // Every code the facade passes names a declared reason, under its own name, and no other.
  const flush = Object.entries(codes).filter(([k]) => k.startsWith('FLUSH_'));
  expect(flush.map(([k, code]) => k === 'FLUSH_' + REASONS[code].toUpperCase())).toEqual(flush.map(() => true));
  expect(flush.map(([, code]) => REASONS[code]).sort()).toEqual(reasons);
  expect([...REASONS].sort()).toEqual(reasons);
  const q = new BeaconQueue('llm-rum/0.1.0', '0123456789abcdef');
  q.push(hex16(1), rec(1, 1), 0);
  const beacon = JSON.parse(q.take(MAX_PAYLOAD, codes.FLUSH_PAGEHIDE, true, '/c/:id', 0, 1.7e12));
  expect(Object.keys(beacon)).toEqual(members);
  expect(beacon).toMatchObject({ v: 1, sdk: 'llm-rum/0.1.0', session: '0123456789abcdef', page: '/c/:id', reason: 'pagehide', dropped: 0, sentAt: 1.7e12 });
});
