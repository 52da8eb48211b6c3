// Node-side helpers shared by the end-to-end specs.
import { expect } from '@playwright/test';

export const ORIGIN = () => process.env.RUM_ORIGIN;
export const OTHER = () => process.env.RUM_OTHER_ORIGIN;

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

/** Nearest-rank percentile (rank ceil(q·n)), the definition the core's histogram estimates. */
export function percentile(values, q) {
  const s = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(q * s.length));
  return s[rank - 1];
}

/** Gaps between consecutive content writes the server recorded. */
export function contentWrites(t) {
  return t.writes.filter((w) => w.kind === 'content');
}
export function gaps(times) {
  const g = [];
  for (let i = 1; i < times.length; i++) g.push(times[i] - times[i - 1]);
  return g;
}
