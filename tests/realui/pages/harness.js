// What every real-UI page shares (tests/e2e/realui.spec.js): llm-rum started the way a new user
// starts it — `init({ collector })`, nothing else — and the app's own streaming call to the
// scripted server (OpenAI chat SSE). The page's URL says:
//   collector  the beacon URL (a real llm-rum-collector);
//   test       the test id: answer n of the page is filed by the server as `<test>-<n>`;
//   q          extra scripted-server parameters for every answer (timing);
//   named      a CSS selector of the element the library renders each answer into: the same page
//              then also calls rum.observe(el) on each new one once it shows text (the
//              comparison run);
//   shown      a CSS selector of the element each answer's text is put into, as plain text:
//              the page records which frames showed how much of it (`window.shown`, ground
//              truth for a typewriter's render delay).
// The prompt typed into the chat names the answer the scripted server sends (`answer=`: list,
// code, default, steps). What the app received of each answer goes to window.answers.
import { init } from 'llm-rum';

const q = new URLSearchParams(location.search);
// For the test, not the SDK: the beacons the page hands the browser for the collector, kept as
// sent (W3C WebDriver, which drives Firefox and WebKit here, cannot see requests). Installed
// before init(), as any fetch wrapper of the app's would be; it passes everything on as is.
window.beacons = [];
{
  const sink = q.get('collector');
  const keep = (url, body) => {
    if (sink && String(url) === sink && typeof body === 'string') window.beacons.push(JSON.parse(body));
  };
  const fetch0 = window.fetch;
  window.fetch = function (input, opts) {
    keep(input, opts && opts.body);
    return fetch0.apply(this, arguments);
  };
  if (navigator.sendBeacon) {
    const beacon0 = navigator.sendBeacon.bind(navigator);
    navigator.sendBeacon = (url, data) => (keep(url, data), beacon0(url, data));
  }
}
export const rumStarted = init({ collector: q.get('collector') });
// For the test, not the SDK: when the core is in, and flush() to send what is queued at the end.
window.rumReady = rumStarted.then((rum) => ((window.rum = rum), rum.ready.then(() => (window.rumActive = rum.active))));
/** What each answer turned out to be, as the app saw it: { id, prompt, chars, outcome,
 * arrivals }; `arrivals`: [when the app read a delta (performance.now()), chars so far]. */
window.answers = [];
window.pageErrors = [];
window.addEventListener('error', (e) => window.pageErrors.push(String(e.message)));
window.addEventListener('unhandledrejection', (e) => window.pageErrors.push(String(e.reason)));

const named = q.get('named');
if (named) {
  // The comparison run: rum.observe(el) on each new answer element as the library puts text
  // in it (a MutationObserver callback runs before the frame that paints the change). Not
  // before: a library may mount an empty element and replace it with the one that shows the
  // text (assistant-ui's smooth text part).
  const seen = new WeakSet();
  const bind = (rum) => {
    const look = () => {
      for (const el of document.querySelectorAll(named)) {
        if (seen.has(el) || !el.textContent) continue;
        seen.add(el);
        rum.observe(el);
      }
    };
    new MutationObserver(look).observe(document.documentElement, { childList: true, subtree: true });
    look();
  };
  rumStarted.then(bind);
}

const shown = q.get('shown');
if (shown) {
  // Ground truth for render delay, independent of the SDK: per element matching `shown` (in the
  // order they first show text), each frame that showed a new length of its text — { lo, hi, len }: the
  // frame's rAF callback, where the text is read (HTML's update the rendering: rAF callbacks,
  // then style, layout, paint; a text put in by a task after that callback is the next
  // frame's), and the end of the window in which the screen showed that frame — the next
  // frame's rAF callback plus a 60 Hz frame, at most three frames after `lo` (the window that
  // paint-compositor.spec.js holds against Chromium's compositor). Records are small: one per
  // frame that changed a length.
  const FRAME = 1000 / 60;
  window.shown = [];
  const els = new Map(); // element → { frames, len }
  let raf = 0;
  let open = [];
  const frame = () => {
    raf = 0;
    const now = performance.now();
    for (const f of open) f.hi = Math.min(now, f.lo + 2 * FRAME) + FRAME;
    open = [];
    for (const [el, s] of els) {
      const len = el.textContent.length;
      if (len === s.len) continue;
      s.len = len;
      const f = { lo: now, len };
      s.frames.push(f);
      open.push(f);
    }
    if (open.length) raf = requestAnimationFrame(frame);
  };
  new MutationObserver(() => {
    for (const el of document.querySelectorAll(shown)) {
      // An element counts once it has text (a library may mount an empty one first and
      // replace it with the answer's).
      if (els.has(el) || !el.textContent) continue;
      const s = { frames: [], len: 0 };
      els.set(el, s);
      window.shown.push(s.frames);
    }
    if (!raf) raf = requestAnimationFrame(frame);
  }).observe(document.documentElement, { childList: true, characterData: true, subtree: true });
}

let turn = 0;

/**
 * Streams the answer to `prompt` from the scripted server: yields each text delta as it arrives.
 * Ends quietly when `signal` aborts (the stop button).
 */
export async function* ask(prompt, signal) {
  const n = ++turn;
  const id = `${q.get('test')}-${n}`;
  const entry = { id, prompt, chars: 0, outcome: 'running', arrivals: [] };
  window.answers.push(entry);
  const answer = /^(list|code|default|steps)$/.test(prompt) ? prompt : 'default';
  const url = `/v1/chat/completions?answer=${answer}&test_id=${encodeURIComponent(id)}&${q.get('q') || ''}`;
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: prompt }] }),
      signal,
    });
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, i);
        buf = buf.slice(i + 2);
        for (const line of ev.split('\n')) {
          if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
          const d = JSON.parse(line.slice(6)).choices?.[0]?.delta?.content;
          if (d) {
            entry.chars += [...d].length;
            entry.arrivals.push([performance.now(), entry.chars]);
            yield d;
          }
        }
      }
    }
    entry.outcome = 'ok';
  } catch (e) {
    if (e && e.name === 'AbortError') entry.outcome = 'aborted';
    else throw e;
  }
}
