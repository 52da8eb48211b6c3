// The early tap (js/capture/tap.js) and the body pass-through it rides on (js/capture/body.js),
// in Node (its WHATWG streams and Response): the bounds exactly — 4096 chunks, 256 KiB, 8
// requests — what is kept by reference and what is copied, and that the app's bytes are the
// source's whichever way it reads. The browser runs of the same path: ready.spec.js (Chromium)
// and engines.spec.js (every engine).
import { test, expect } from '@playwright/test';
import { Tap, MAX_KEPT_BYTES, MAX_KEPT_CHUNKS, MAX_TAPS, takeSlot, giveSlot } from '../../js/capture/tap.js';
import { passThrough } from '../../js/capture/body.js';
import { OK } from '../../js/codes.js';

/** A response whose body yields `sizes.length` chunks of those sizes (byte i of the body is i % 251). */
function response(sizes) {
  let i = 0;
  let at = 0;
  const body = new ReadableStream({
    pull(c) {
      if (i === sizes.length) return c.close();
      const u = new Uint8Array(sizes[i++]);
      for (let k = 0; k < u.length; k++) u[k] = (at + k) % 251;
      at += u.length;
      c.enqueue(u);
    },
  });
  return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
}
const expected = (n) => Uint8Array.from({ length: n }, (_, k) => k % 251);
const tap = () => new Tap('https://chat.example/v1/chat', 'POST', 1, '');

/** Reads `res` with a default reader (the clients' way: the fast path after the first read). */
async function readDefault(res) {
  const r = res.body.getReader();
  const got = [];
  for (;;) {
    const { done, value } = await r.read();
    if (done) return got;
    got.push(value);
  }
}
const concat = (parts) => {
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  parts.reduce((o, p) => (out.set(p, o), o + p.length), 0);
  return out;
};

test('keeps the first 4096 chunks and stops at the next, noting when; the app gets every byte', async () => {
  const t = tap();
  const sizes = Array(5000).fill(3);
  const got = await readDefault(passThrough(response(sizes), t));
  expect(concat(got)).toEqual(expected(15000));
  expect(t.kept.length / 4).toBe(MAX_KEPT_CHUNKS);
  expect(t.keptBytes).toBe(3 * MAX_KEPT_CHUNKS);
  expect(t.over).toBeGreaterThan(0);
  expect(t.over).toBeGreaterThanOrEqual(t.kept[t.kept.length - 4]);
  expect(t.ended[0]).toBe(OK);
});

test('keeps at most 256 KiB: the chunk that does not fit ends the keeping', async () => {
  const t = tap();
  const got = await readDefault(passThrough(response(Array(300).fill(1000)), t));
  expect(concat(got)).toEqual(expected(300_000));
  expect(t.keptBytes).toBe(1000 * Math.floor(MAX_KEPT_BYTES / 1000));
  expect(t.over).toBeGreaterThan(0);
});

test('a default reader gets the very chunks the tap keeps (no copy); a byte stream read detaches them, so the tap keeps copies', async () => {
  const byRef = tap();
  const got = await readDefault(passThrough(response([10, 20, 30, 40]), byRef, true));
  const kept = (t) => t.kept.filter((_, i) => i % 4 === 2);
  // The first read goes through the stream (and is copied); the rest take the fast path.
  expect(kept(byRef).slice(1)).toEqual(got.slice(1));
  for (let i = 1; i < got.length; i++) expect(kept(byRef)[i]).toBe(got[i]);
  // Async iteration: every chunk through the byte stream, whose enqueue() transfers the buffer.
  const copied = tap();
  const parts = [];
  for await (const c of passThrough(response([10, 20, 30, 40]), copied, true).body) parts.push(c.slice());
  expect(concat(parts)).toEqual(expected(100));
  expect(kept(copied).map((c) => c.byteLength)).toEqual([10, 20, 30, 40]);
  expect(concat(kept(copied))).toEqual(expected(100));
  // Each kept entry records its length then: a reference the app detached later is detected.
  expect(copied.kept.filter((_, i) => i % 4 === 3)).toEqual([10, 20, 30, 40]);
});

test('once live, chunks go to the sink and what was kept is let go', async () => {
  const t = tap();
  const sink = { chunks: [], ends: [], chunk(v) { this.chunks.push(v.byteLength); }, end(o) { this.ends.push(o); } };
  const res = passThrough(response([5, 6, 7]), t, true);
  const r = res.body.getReader();
  await r.read();
  expect(t.kept.length).toBe(4);
  t.live(sink);
  expect([t.kept.length, t.keptBytes]).toEqual([0, 0]);
  while (!(await r.read()).done);
  expect(sink.chunks).toEqual([6, 7]);
  expect(sink.ends).toEqual([OK]);
  // Let go of (null): nothing more is kept or forwarded.
  const gone = tap();
  gone.live(null);
  await readDefault(passThrough(response([5, 6]), gone, true));
  expect([gone.kept.length, gone.ended]).toEqual([0, null]);
});

test('at most 8 requests are tapped at once', () => {
  const taken = [];
  while (takeSlot()) taken.push(1);
  expect(taken).toHaveLength(MAX_TAPS);
  giveSlot();
  expect(takeSlot()).toBe(true);
  expect(takeSlot()).toBe(false);
  for (let i = 0; i < MAX_TAPS; i++) giveSlot();
  expect(takeSlot()).toBe(true);
  giveSlot();
});
