// Node-side helpers shared by the end-to-end specs.
import { expect } from '@playwright/test';

export const ORIGIN = () => process.env.RUM_ORIGIN;
export const OTHER = () => process.env.RUM_OTHER_ORIGIN;
/** The real nginx in front of ORIGIN's server (server.js NGINX_LOCATIONS). */
export const NGINX = () => process.env.RUM_NGINX_ORIGIN;

let seq = 0;
/** A test id unique in this run (the server files its ground truth under it). */
export const testId = (name) => `${name}-${process.pid}-${++seq}-${Date.now()}`;

/** The scripted server's ground truth for a request, waiting for it to finish. */
export async function truth(id, waitMs = 10_000) {
  const res = await fetch(`${ORIGIN()}/__truth?test_id=${encodeURIComponent(id)}&wait_ms=${waitMs}`);
  expect(res.status, `truth for ${id}`).toBe(200);
  return res.json();
}

/** Opens the blank test page (optionally cross-origin isolated) with the package loaded. */
export async function openPage(page, { coi = false } = {}) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  await page.goto(`${ORIGIN()}/blank.html${coi ? '?coi=1' : ''}`);
  await page.waitForFunction(() => window.llmRum !== undefined);
  return errors;
}

/** Emulates a visibility change (headless pages are always "visible"). */
export const setVisibility = (page, state) =>
  page.evaluate((state) => {
    Object.defineProperty(document, 'visibilityState', { value: state, configurable: true });
    document.dispatchEvent(new Event('visibilitychange'));
  }, state);

/** Nearest-rank percentile (rank ceil(q·n)), the definition the core's histogram estimates. */
export function percentile(values, q) {
  const s = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(q * s.length));
  return s[rank - 1];
}

/**
 * The server's content writes that complete an event (`tokens > 0`; with split=1 the first
 * half of an event carries none), each with `epoch`: its send time on the wall clock.
 */
export function contentWrites(t) {
  return t.writes.filter((w) => w.kind === 'content' && w.tokens > 0).map((w) => ({ ...w, epoch: t.received_unix_ms + w.t_ms }));
}

/**
 * Client-minus-server time of an event, both on the machine's wall clock: the record's
 * `startEpochMs + offset` (the page's performance.timeOrigin timeline) against the server's
 * `received_unix_ms + t_ms`. Comparing offsets from the server's receive instead would charge
 * the browser's request-sending path (3–5 ms of IPC on this machine) to the SDK.
 */
export const lag = (rec, offset, write) => rec.startEpochMs + offset - write.epoch;
export function gaps(times) {
  const g = [];
  for (let i = 1; i < times.length; i++) g.push(times[i] - times[i - 1]);
  return g;
}
