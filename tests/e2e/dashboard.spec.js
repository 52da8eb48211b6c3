// Issue 11, finding 1 (stored XSS), in real Chromium: anyone who can POST a beacon chooses the
// Server-Timing names, routes, models and pages the dashboard shows. Beacons carrying markup
// make a budget alert fire with such a name as "the stage that grew most"; the operator then
// opens the dashboard with its read token. Nothing injected may run or even become an
// element, and the token must leave the address bar. A second test serves hostile API answers
// (markup in every string) to check the page's rendering on its own, past ingest's encoding.
import { test, expect } from '@playwright/test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startCollector } from './server.js';

const EVIL = `<img src=x onerror="window.__xss=(window.__xss||0)+1">`;
const TOKEN = 'read-s3cret';

let dir;
test.beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llm-rum-dashboard-'));
});
test.afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Watches the page for injected script, CSP violations and errors. */
async function watch(page) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective));
  });
  return errors;
}

const injected = (page) =>
  page.evaluate(() => ({
    xss: window.__xss || 0,
    imgs: document.querySelectorAll('img, script:not([src]), iframe, object, [onerror], [onload]').length,
    csp: window.__csp,
  }));

test('beacons carrying markup fire an alert; the dashboard shows it as text and runs none of it', async ({ page }) => {
  test.setTimeout(60_000);
  const c = await startCollector(['--db', path.join(dir, 'rum.db'), '--rate-limit', '0', '--read-token', TOKEN,
    '--budget', 'ttft p95<=300', '--alert-window', '2', '--sustain', '1', '--eval-interval', '100']);
  try {
    const origin = c.origins[0];
    let n = 0;
    const send = async (ttft) => {
      const rec = {
        id: `x${++n}`, outcome: 'ok', startEpochMs: Date.now() - 5, url: `https://api.test/v1/${EVIL}?q=1`, model: EVIL,
        ttft, marks: { start: 0, headers: 20, firstToken: ttft }, serverTiming: [{ name: EVIL, dur: ttft - 40 }],
      };
      const body = { v: 1, sdk: EVIL, session: EVIL, page: `/${EVIL}`, sentAt: Date.now(), records: [rec] };
      const res = await fetch(`${origin}/v1/rum`, { method: 'POST', headers: { 'content-type': 'text/plain;charset=UTF-8' }, body: JSON.stringify(body) });
      expect(res.status).toBe(200);
    };
    const alerts = async () => (await fetch(`${origin}/api/alerts`, { headers: { authorization: `Bearer ${TOKEN}` } })).json();
    for (let i = 0; i < 10; i++) {
      await send(100);
      await new Promise((r) => setTimeout(r, 50));
    }
    // Slow answers until the alert fires (bounded), naming the injected stage.
    let fired;
    for (const t0 = Date.now(); ; ) {
      await send(900);
      const a = await alerts();
      if (a.firing === 1) {
        fired = a.alerts[0];
        break;
      }
      expect(Date.now() - t0, 'the alert fires').toBeLessThan(15_000);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(fired.grewMost.stage).toBe('server:%3Cimg%20src=x%20onerror=%22window.__xss=%28window.__xss%7C%7C0%29+1%22%3E');

    const errors = await watch(page);
    const requests = [];
    page.on('request', (r) => requests.push(r));
    await page.goto(`${origin}/?token=${TOKEN}`);
    const grew = page.locator('#alerts td.grew b');
    await expect(grew).toHaveText(fired.grewMost.stage);
    await expect(page.locator('#alerts .pill.firing').first()).toBeVisible();
    await expect(page.locator('#status')).toHaveText(/^updated /);
    // The stage legend shows the name as text too.
    await expect(page.locator('#stages svg text', { hasText: 'server · %3Cimg' })).toHaveCount(1);
    expect(await injected(page)).toEqual({ xss: 0, imgs: 0, csp: [] });
    expect(errors).toEqual([]);
    // The token left the address bar; API calls carry it in a header, no URL or Referer holds it.
    expect(await page.evaluate(() => location.href)).toBe(`${origin}/`);
    const api = requests.filter((r) => r.url().includes('/api/'));
    expect(api.length).toBeGreaterThanOrEqual(4);
    for (const r of api) {
      expect(r.url()).not.toContain('token');
      expect((await r.allHeaders()).authorization).toBe(`Bearer ${TOKEN}`);
    }
    for (const r of requests) expect((await r.allHeaders()).referer, r.url()).toBeUndefined();
    // A reload (the token now in sessionStorage only) still works; another tab without the
    // token is told how to open the page.
    await page.reload();
    await expect(page.locator('#status')).toHaveText(/^updated /);
    expect(await injected(page)).toEqual({ xss: 0, imgs: 0, csp: [] });
    const other = await page.context().newPage();
    await other.goto(`${origin}/`);
    await expect(other.locator('#status')).toHaveText(/read token required/);
  } finally {
    await c.stop();
  }
});

test('hostile API answers render as text; HTML sinks are refused by the page policy', async ({ page }) => {
  const c = await startCollector(['--db', path.join(dir, 'rum.db'), '--rate-limit', '0']);
  try {
    const origin = c.origins[0];
    const stat = { count: 1, p50: 10, p75: 10, p95: 10, p99: 10 };
    const answers = {
      summary: {
        count: 1, outcomes: { ok: 1, [EVIL]: 1 }, stallRate: 0.5, bufferedRate: 0, upstreamBufferedRate: 1, hiddenCount: 0,
        routes: [{ route: EVIL, count: 1, bufferedRate: 0, upstreamBufferedRate: 1 }],
        stallCauses: { network: 1, render: 1 }, dropped: 1, refused: { tooOld: 1, future: 0 },
        metrics: Object.fromEntries(['ttft', 'perceivedTtft'].map((k) => [k, stat])),
        stages: [
          { stage: 'start→headers', median: 20, count: 1, server: false },
          { stage: `server:${EVIL}`, median: 15, count: 1, server: true },
          { stage: EVIL, median: 5, count: 1, server: false },
        ],
      },
      histogram: { binWidth: 10, bins: 2, series: [{ metric: EVIL, count: 2, counts: [1, 1] }, { metric: 'ttft', count: 1, counts: [1, 0] }] },
      timeseries: { metric: EVIL, q: 0.95, bucketMs: 60000, budgets: [{ q: 0.95, limit: 5, text: EVIL }], points: [{ t: Date.now() - 60000, n: 1, value: 10 }] },
      alerts: {
        firing: 1, windowSecs: EVIL, sustainSecs: EVIL,
        budgets: [{ budget: EVIL, metric: EVIL, q: 0.95, limit: 1, current: 10 }],
        alerts: [{ id: 1, state: EVIL, budget: EVIL, value: 10, peak: 12, breachSinceMs: 1, firedAtMs: 2, resolvedAtMs: null,
          grewMost: { stage: EVIL, before: 1, during: 2, delta: 1 }, stageGrowth: [] }],
      },
    };
    const errors = await watch(page);
    await page.route(`${origin}/api/**`, (route) => {
      const name = new URL(route.request().url()).pathname.split('/').pop();
      route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(answers[name]) });
    });
    await page.goto(`${origin}/`);
    await expect(page.locator('#status')).toHaveText(/^updated /);
    // The markup is there, as text, wherever a value is shown.
    await expect(page.locator('#alerts td.grew b')).toHaveText(EVIL);
    await expect(page.locator('#alerts tbody td').nth(1)).toHaveText(EVIL);
    await expect(page.locator('#alertsNote')).toContainText(EVIL);
    await expect(page.locator('#routes tbody td').first()).toHaveText(EVIL);
    await expect(page.locator('#routes tbody td.hot')).toHaveText('100.0%');
    await expect(page.locator('#stages svg text', { hasText: `server · ${EVIL}` })).toHaveCount(1);
    expect(await injected(page)).toEqual({ xss: 0, imgs: 0, csp: [] });
    expect(errors).toEqual([]);
    // Even code that tried: HTML string sinks, inline handlers and inline script text all
    // need Trusted Types (none may be created) and throw; what the CSP sees is blocked.
    const tried = await page.evaluate(() => {
      const attempt = (f) => {
        try {
          f();
          return 'accepted';
        } catch (e) {
          return e.name;
        }
      };
      return {
        html: attempt(() => document.body.insertAdjacentHTML('beforeend', '<img src=x onerror="window.__xss=1">')),
        inner: attempt(() => (document.body.lastElementChild.innerHTML = '<b>x</b>')),
        handler: attempt(() => document.createElement('img').setAttribute('onerror', 'window.__xss=1')),
        script: attempt(() => {
          const s = document.createElement('script');
          s.textContent = 'window.__xss=1';
          document.body.append(s);
        }),
        policy: attempt(() => trustedTypes.createPolicy('p', { createHTML: (x) => x })),
      };
    });
    expect(tried).toEqual({ html: 'TypeError', inner: 'TypeError', handler: 'TypeError', script: 'TypeError', policy: 'TypeError' });
    await page.waitForTimeout(200);
    expect(await injected(page)).toMatchObject({ xss: 0, imgs: 0 });
  } finally {
    await c.stop();
  }
});
