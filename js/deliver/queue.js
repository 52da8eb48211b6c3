// The beacon queue and its policy (when, what, retry): which finished records go to the
// collector in which payload, and when. transport.js only moves the payloads and reports their
// outcomes. Pure: times and jitter come in as arguments (tested in Node: tests/e2e/queue.spec.js).
//
// It was in the wasm core until issue 14 (size): it computes no metric — it holds record texts
// the core finished — and there it cost 2.5 KB brotli on every page; here it is part of the
// transport chunk, which only pages with a collector load.
//
// The policy: flush a little after a record completes (FLUSH_DELAY_MS), at once past
// FLUSH_BYTES, urgently when the page hides; every payload ≤ the size the sender allows
// (MAX_PAYLOAD, smaller for the keepalive quota or a refused sendBeacon); failed sends go back
// to the front and wait out an exponential backoff with jitter (or Retry-After); the queue is
// bounded and drops oldest, counting what it dropped into the next payload. A record queued
// with the id of a queued one (a `partial` sent on page hide, then completed) replaces it; the
// id comes with the record from the core (Core::take_records), never parsed out of its text.

/** The largest payload in UTF-8 bytes: under sendBeacon's and keepalive's 64 KiB (Fetch §4.5). */
export const MAX_PAYLOAD = 60 * 1024;
/** Queued bytes that flush at once rather than after FLUSH_DELAY_MS. */
export const FLUSH_BYTES = 16 * 1024;
/** A record waits this long for others to share its payload. */
export const FLUSH_DELAY_MS = 1000;
export const MAX_QUEUE_RECORDS = 500;
export const MAX_QUEUE_BYTES = 512 * 1024;
export const BACKOFF_START_MS = 1000;
export const BACKOFF_CAP_MS = 60_000;
/** Room for the envelope around the records (plus 6 bytes per char of the page, escaped). */
const ENVELOPE_RESERVE = 512;

const utf8 = new TextEncoder();

/** The beacon's `reason` by its code (codes.js FLUSH_*). */
export const REASONS = ['timer', 'manual', 'hidden', 'pagehide', 'online', 'restore'];

/** Worth retrying: network error (0), timeout, rate limit, server error. 4xx are final. */
export const retryable = (status) => status === 0 || status === 408 || status === 429 || (status >= 500 && status < 600);

/**
 * The wait after failed `attempt` (0-based): 1 s doubling to 60 s, times 50–100 % by `jitter`
 * in [0, 1) (so a fleet of tabs does not retry in step), or the collector's Retry-After
 * (`retryAfterMs`, < 0 when absent; at most 10 minutes) when that is longer.
 */
export function backoffMs(attempt, jitter, retryAfterMs) {
  const wait = Math.min(BACKOFF_START_MS * 2 ** Math.min(attempt, 16), BACKOFF_CAP_MS) * (0.5 + 0.5 * Math.min(Math.max(jitter, 0), 1));
  return Math.max(wait, Math.min(retryAfterMs, 10 * BACKOFF_CAP_MS));
}

export class BeaconQueue {
  /** `sdk` (`llm-rum/<version>`) and the tab `session`: what every beacon says of its sender. */
  constructor(sdk, session) {
    this.head = '{"v":1,"sdk":' + JSON.stringify(sdk) + ',"session":' + JSON.stringify(session);
    /** @type {{ id: string, json: string, n: number }[]} oldest first */
    this.queue = [];
    this.bytes = 0;
    this.dropped = 0;
    this.firstAt = -1; // when the oldest queued record came (-1: none)
    this.holdUntil = 0; // backoff: no non-urgent send before this time
    this.attempt = 0;
    /** @type {Map<number, { items: any[], dropped: number }>} payloads awaiting their outcome */
    this.inFlight = new Map();
    this.batch = 0; // the last payload's number
  }

  remove(id) {
    const i = this.queue.findIndex((it) => it.id === id);
    if (i >= 0) this.bytes -= this.queue.splice(i, 1)[0].n;
  }

  /**
   * Queues a record at `t`: its `id` (the core hands it over with the text: nothing here reads
   * it out of the JSON, whose key order is the encoder's business) and its JSON object text.
   * One with a queued id replaces it (a `partial` snapshot, then the final record).
   */
  push(id, json, t) {
    const it = { id, json, n: utf8.encode(json).length };
    if (it.n + ENVELOPE_RESERVE > MAX_PAYLOAD) {
      this.dropped++; // could never be sent
      return;
    }
    this.remove(it.id);
    this.bytes += it.n;
    this.queue.push(it);
    while (this.queue.length > MAX_QUEUE_RECORDS || this.bytes > MAX_QUEUE_BYTES) {
      this.bytes -= this.queue.shift().n;
      this.dropped++;
    }
    if (this.firstAt < 0) this.firstAt = t;
  }

  /** When the next non-urgent flush is due (performance.now() ms), or -1 with nothing queued. */
  dueAt() {
    if (this.firstAt < 0) return -1;
    return Math.max(this.bytes >= FLUSH_BYTES ? this.firstAt : this.firstAt + FLUSH_DELAY_MS, this.holdUntil);
  }

  /**
   * The next payload of at most `maxBytes` (a v1 beacon, JSON text), its records now in flight
   * as batch `this.batch`; undefined when nothing may go (empty, held by backoff unless
   * `urgent`, or the oldest record is larger than the allowance). `page`: the beacon's page,
   * templated (Core::page); `reason` its code (codes.js FLUSH_*); `sentAt`: now in epoch ms on
   * the records' clock, written whole so the collector can correct the client's clock skew
   * (omitted when negative).
   */
  take(maxBytes, reason, urgent, page, t, sentAt) {
    if (!urgent && t < this.holdUntil) return undefined;
    const budget = Math.min(maxBytes, MAX_PAYLOAD) - ENVELOPE_RESERVE - page.length * 6;
    let n = 0;
    let size = 0;
    while (n < this.queue.length && size + this.queue[n].n + 1 <= budget) size += this.queue[n++].n + 1;
    if (!n) return undefined;
    const items = this.queue.splice(0, n);
    this.bytes -= size - n;
    if (!this.queue.length) this.firstAt = -1;
    let out = this.head + ',"page":' + JSON.stringify(page) + ',"reason":"' + REASONS[reason] + '","dropped":' + this.dropped;
    if (sentAt >= 0) out += ',"sentAt":' + Math.round(sentAt);
    out += ',"records":[' + items.map((it) => it.json).join(',') + ']}';
    this.batch = (this.batch % 0xffffffff) + 1;
    this.inFlight.set(this.batch, { items, dropped: this.dropped });
    this.dropped = 0;
    return out;
  }

  /**
   * The outcome of sending `batch`: `status` 2xx stored (or accepted by sendBeacon, which gives
   * no answer), 0 a network error, else the HTTP status; `retryAfterMs` < 0 when absent;
   * `jitter` in [0, 1). Retryable: its records go back to the front (but those superseded
   * meanwhile) and the queue holds for `backoffMs`. Anything else (400, 413: the collector
   * will never take them) is dropped and counted.
   */
  result(batch, t, status, retryAfterMs, jitter) {
    const b = this.inFlight.get(batch);
    if (!b) return;
    this.inFlight.delete(batch);
    if (status >= 200 && status < 300) {
      this.attempt = 0;
      this.holdUntil = 0;
      return;
    }
    if (!retryable(status)) {
      this.dropped += b.items.length + b.dropped;
      return;
    }
    this.dropped += b.dropped;
    const back = b.items.filter((it) => !this.queue.some((q) => q.id === it.id));
    for (const it of back) this.bytes += it.n;
    this.queue.unshift(...back);
    this.holdUntil = t + backoffMs(this.attempt++, jitter, retryAfterMs);
    if (this.firstAt < 0) this.firstAt = t;
  }

  /**
   * Takes every queued and unacknowledged record (the page is going away and the browser
   * refused to send): one record per line, oldest first, each its id, a tab, its JSON. The
   * caller bounds what it stores; `restore` skips a line cut short.
   */
  drain() {
    const all = [...[...this.inFlight.values()].flatMap((b) => b.items), ...this.queue];
    this.inFlight.clear();
    this.queue = [];
    this.bytes = 0;
    this.firstAt = -1;
    return all.map((it) => it.id + '\t' + it.json + '\n').join('');
  }

  /** Queues records given one per line (what an earlier page's `drain` stored). */
  restore(text, t) {
    for (const line of text.split('\n')) {
      const tab = line.indexOf('\t');
      // A line cut short at the front (bounded storage) has lost its id or is no object.
      if (tab === 16 && /^[0-9a-f]{16}$/.test(line.slice(0, 16)) && line.endsWith('}')) this.push(line.slice(0, 16), line.slice(17), t);
    }
  }
}
