// The demo page: four panes (each with its own llm-rum instance and renderer), one
// Ask that drives them all, a background-load control, and per pane the SDK's numbers, a
// timeline (text arrivals vs screen updates, stalls shaded) and the decomposition of the wait.
// Every number shown comes from the pane's llm-rum record; the arrival/DOM ticks are the
// pane's own display-only observations. Nothing here loads from the network but this server.
import { startPane } from './pane.js';

// Chromium gives each site its own renderer process (site isolation), and a page's frames of
// one site share one main thread. The three well-behaved panes are frames from the other
// loopback name (localhost ↔ 127.0.0.1), away from this page's drawing and from the janky
// pane's blocking work. The janky pane runs in this page itself (the charts may hiccup; the
// other panes do not): Long Animation Frame entries, its stall blame, go to the top document.
const PANES = [
  { kind: 'streamed', title: 'Streamed', note: 'appends each token as it arrives', isolate: true },
  { kind: 'buffered', title: 'Buffered', note: 'shows the answer when it is complete', isolate: true },
  { kind: 'throttled', title: 'Throttled', note: 'updates the DOM at most every 200 ms', isolate: true },
  { kind: 'janky', title: 'Janky', note: 'markdown re-render per token, 300 ms blocking pass every 15th' },
];
const SEGMENTS = [
  ['click', 'click → request', '--s-click'],
  ['network', 'network', '--s-net'],
  ['queue', 'server queue', '--s-queue'],
  ['prefill', 'prefill', '--s-prefill'],
  ['tp', 'first token → paint', '--s-tp'],
  ['stream', 'streaming', '--s-stream'],
  ['tail', 'tail render', '--s-tail'],
];

const params = new URLSearchParams(location.search);
const config = await import('/config/config.js').catch(() => ({}));
const collector = params.get('collector') || config.collector || '';
const dashboard = params.get('dashboard') || config.dashboard || '';
if (dashboard) Object.assign(document.getElementById('dash'), { href: dashboard, hidden: false });

const css = (v) => getComputedStyle(document.documentElement).getPropertyValue(v).trim();
const ms = (v) => (v == null ? '—' : v >= 10000 ? (v / 1000).toFixed(1) + ' s' : Math.round(v) + ' ms');
const NS = 'http://www.w3.org/2000/svg';
const svgEl = (tag, attrs, text) => {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text != null) e.textContent = text;
  return e;
};

// Legend, once.
const legend = document.getElementById('legend');
const swatch = (color, label) => `<span><i style="background:${color}"></i>${label}</span>`;
legend.innerHTML =
  swatch('var(--arrive)', 'text arrived') + swatch('var(--dom)', 'text put on screen') + swatch('var(--paint)', 'first / last paint (llm-rum)') +
  swatch('color-mix(in srgb, var(--render) 35%, transparent)', 'render stall') + swatch('color-mix(in srgb, var(--net) 35%, transparent)', 'network stall') +
  '<span style="flex-basis:100%;height:0"></span>' + SEGMENTS.map(([, label, v]) => swatch(`var(${v})`, label)).join('');

// Panes (see PANES for which load from the other loopback name).
const altHost = { '127.0.0.1': 'localhost', localhost: '127.0.0.1' }[location.hostname];
const main = document.getElementById('panes');
const state = {};
for (const p of PANES) {
  const div = document.createElement('section');
  div.className = 'pane';
  const framed = p.isolate && altHost;
  div.innerHTML = `<h2>${p.title} <small>${p.note}</small></h2>${framed ? `<iframe title="${p.title} answer"></iframe>` : '<div class="answer" aria-live="polite"></div>'}
    <div class="nums"></div><svg class="tl" height="64"></svg><svg class="bar" height="34"></svg><div class="status"></div><p class="advice" hidden></p>`;
  main.append(div);
  const s = (state[p.kind] = { ...p, div, origin: location.origin, ready: false, ticks: [], record: null, ask: 0 });
  if (framed) {
    const src = new URL('pane.html?kind=' + p.kind + (collector ? '&collector=' + encodeURIComponent(collector) : ''), location.href);
    src.hostname = altHost;
    const frame = div.querySelector('iframe');
    frame.src = src.href;
    s.origin = src.origin;
    s.send = (msg) => frame.contentWindow.postMessage(msg, src.origin);
  } else {
    // In this page: same messages, through a local channel (no cross-frame hop).
    const post = (msg) => dispatchEvent(new MessageEvent('message', { data: { pane: p.kind, ...msg }, origin: location.origin }));
    startPane(p.kind, div.querySelector('.answer'), collector || null, post).then((ask) => {
      s.send = (msg) => ask(msg);
      post({ type: 'ready' });
    });
  }
}
let allReady;
const ready = new Promise((resolve) => (allReady = resolve));

let askNo = 0;
let clickEpoch = 0;
const history = []; // every finished ask: { scenario, load, records: {kind: record} }
let current = null;

addEventListener('message', (e) => {
  const m = e.data;
  const s = m && state[m.pane];
  if (!s || e.origin !== s.origin) return;
  if (m.type === 'ready') {
    s.ready = true;
    if (PANES.every((p) => state[p.kind].ready)) allReady();
  }
  if (m.type === 'pageerror') {
    window.demoErrors.push(`${m.pane}: ${m.message}`);
    schedule(true);
    return;
  }
  if (m.ask !== askNo) return;
  if (m.type === 'tick') s.ticks.push({ what: m.what, t: m.t });
  if (m.type === 'error') s.status = 'error: ' + m.message;
  if (m.type === 'record' && m.record.outcome !== 'partial') {
    s.record = m.record;
    current.records[s.kind] = m.record;
    if (PANES.every((p) => current.records[p.kind])) {
      history.push(current);
      current.done();
    }
  }
  schedule(m.type !== 'tick');
});

// Redraw at most 4 times a second while answers stream, at once when a record lands (cheap
// for this page, which shares its thread with the janky pane).
let drawTimer = 0;
let lastDraw = 0;
const schedule = (now) => {
  if (now) {
    clearTimeout(drawTimer);
    drawTimer = 0;
    requestAnimationFrame(draw);
    return;
  }
  if (!drawTimer) drawTimer = setTimeout(() => {
    drawTimer = 0;
    requestAnimationFrame(draw);
  }, Math.max(0, lastDraw + 250 - performance.now()));
};

/** The wait, split into what caused it (all from the record; Server-Timing for the server). */
function decompose(r) {
  const st = (name) => ((r.serverTiming || []).find((e) => e.name === name) || {}).dur || 0;
  const m = r.marks;
  const click = m.interaction == null ? 0 : -m.interaction;
  const queue = st('queue');
  const prefill = st('prefill');
  const network = Math.max(0, (r.ttft ?? 0) - queue - prefill);
  const fp = m.firstPaint ?? m.firstToken;
  const tp = Math.max(0, (fp ?? 0) - (m.firstToken ?? 0));
  const stream = Math.max(0, (m.lastToken ?? 0) - (fp ?? 0));
  const tail = Math.max(0, (m.lastPaint ?? m.lastToken ?? 0) - Math.max(m.lastToken ?? 0, fp ?? 0));
  return { click, network, queue, prefill, tp, stream, tail };
}

function draw() {
  lastDraw = performance.now();
  const errors = document.getElementById('errors');
  errors.hidden = !window.demoErrors.length;
  errors.textContent = window.demoErrors.length ? 'Script errors: ' + window.demoErrors.join(' · ') : '';
  // One time scale for every pane: from the click to the latest thing any pane showed.
  let span = 1000;
  for (const p of PANES) {
    const s = state[p.kind];
    for (const k of s.ticks) span = Math.max(span, k.t - clickEpoch);
    if (s.record && s.record.perceivedTotal != null) span = Math.max(span, s.record.perceivedTotal - (s.record.marks.interaction ?? 0));
  }
  span = Math.ceil((span * 1.04) / 500) * 500;
  for (const p of PANES) drawPane(state[p.kind], span);
}

function drawPane(s, span) {
  const r = s.record;
  const nums = [
    ['ttft', r && r.ttft, 'network: first token'],
    ['perceived TTFT', r && r.perceivedTtft, 'click → first word painted'],
    ['first paint', r && r.ttfp, 'request → first paint'],
    ['render p95', r && r.renderDelay && r.renderDelay.p95, 'render delay p95: how long arrived text waited for the screen'],
    ['stalls net/render', r ? `${r.stalls.network} / ${r.stalls.render}` : null, 'gaps > 250 ms the person saw: network / render'],
    ['total', r && r.perceivedTotal, 'click → last word painted'],
  ];
  s.div.querySelector('.nums').innerHTML = nums
    .map(([k, v, title]) => {
      const hot = (k === 'perceived TTFT' && v > 1500) || (k.startsWith('stalls') && r && r.stalls.render > 0) || (k === 'render p95' && v > 100);
      return `<div class="${hot ? 'hot' : ''}" title="${title}"><span>${k}</span><b>${typeof v === 'string' ? v : ms(v)}</b></div>`;
    })
    .join('');

  const tl = s.div.querySelector('.tl');
  const W = tl.clientWidth || 600;
  const L = 64;
  const x = (t) => L + ((W - L - 4) * Math.max(0, t)) / span;
  tl.replaceChildren();
  const rows = [['arrived', 8, 'var(--arrive)', 'arrive'], ['on screen', 30, 'var(--dom)', 'dom']];
  // Stalls first (shaded behind the ticks), from the record.
  if (r) {
    const off = -(r.marks.interaction ?? 0);
    for (const st of r.stallList) {
      const color = st.cause === 'render' ? 'var(--render)' : 'var(--net)';
      tl.append(svgEl('rect', { x: x(off + st.start), y: 2, width: Math.max(1, x(off + st.start + st.dur) - x(off + st.start)), height: 44, fill: color, 'fill-opacity': 0.28 }));
    }
  }
  for (const [label, y, color, what] of rows) {
    tl.append(svgEl('text', { x: 0, y: y + 12, class: 'lbl' }, label));
    tl.append(svgEl('line', { x1: L, x2: W - 4, y1: y + 8, y2: y + 8, stroke: '#e4e7ee' }));
    for (const k of s.ticks) if (k.what === what) tl.append(svgEl('rect', { x: x(k.t - clickEpoch) - 0.5, y, width: 1.6, height: 16, fill: color }));
  }
  // Bursts: text that reached the page together (≥ 8 pieces within one frame, the record's
  // definition of a burst's size), marked with how many came at once.
  for (const b of bursts(s.ticks)) {
    const px = x(b.t - clickEpoch);
    tl.append(svgEl('rect', { x: px - 2, y: 2, width: 4, height: 26, fill: 'var(--arrive)', class: 'burst' }));
    tl.append(svgEl('text', { x: px + 4, y: 9, class: 'burst-n' }, `×${b.n}`));
  }
  if (r) {
    const off = -(r.marks.interaction ?? 0);
    for (const [t, label] of [[r.marks.firstPaint, 'first paint'], [r.marks.lastPaint, 'last paint']]) {
      if (t == null) continue;
      const px = x(off + t);
      tl.append(svgEl('path', { d: `M${px - 5},48 L${px + 5},48 L${px},40 Z`, fill: 'var(--paint)' }));
      if (label === 'first paint') tl.append(svgEl('text', { x: px + 7, y: 49 }, label));
    }
  }
  // Axis.
  for (let t = 0; t <= span; t += span > 6000 ? 1000 : 500) {
    tl.append(svgEl('line', { x1: x(t), x2: x(t), y1: 50, y2: 54, stroke: '#9aa3b5' }));
    tl.append(svgEl('text', { x: x(t) - 8, y: 64 }, t === 0 ? 'click' : (t / 1000).toFixed(1) + ' s'));
  }

  const bar = s.div.querySelector('.bar');
  bar.replaceChildren();
  bar.append(svgEl('text', { x: 0, y: 19, class: 'lbl' }, 'the wait'));
  if (r) {
    const d = decompose(r);
    let t = 0;
    for (const [key, label, v] of SEGMENTS) {
      const w = d[key];
      if (!(w > 0)) continue;
      const x0 = x(t);
      const x1 = x(t + w);
      bar.append(svgEl('rect', { x: x0, y: 4, width: Math.max(0.5, x1 - x0), height: 22, fill: css(v) }, null));
      bar.lastChild.append(svgEl('title', {}, `${label}: ${ms(w)}`));
      if (x1 - x0 > 46) bar.append(svgEl('text', { x: x0 + 4, y: 19, style: 'fill:#fff;font-weight:600' }, ms(w)));
      t += w;
    }
  }
  s.div.querySelector('.status').textContent =
    s.status || (r ? `${r.outcome} · ${r.outputTokens} tokens · tpot ${ms(r.tpot)} · queue ${ms(decompose(r).queue)} · trace ${r.traceId.slice(0, 8)}…` : s.ticks.length ? 'streaming…' : '');
  const advice = s.div.querySelector('.advice');
  const text = r ? adviceFor(r) : '';
  advice.hidden = !text;
  advice.textContent = text;
}

/** Arrival ticks that came together: ≥ 8 within 16 ms of the first (display only). */
function bursts(ticks) {
  const out = [];
  let cur = null;
  for (const k of ticks) {
    if (k.what !== 'arrive') continue;
    if (cur && k.t - cur.t <= 16) cur.n++;
    else out.push((cur = { t: k.t, n: 1 }));
  }
  return out.filter((b) => b.n >= 8);
}

/**
 * What to change, from the record: `upstreamBuffered` (something between the model and the
 * page held the text back; `upstreamHints` say what) and the UI's own `buffered` — two
 * different fixes.
 */
function adviceFor(r) {
  const out = [];
  if (r.upstreamBuffered) {
    const d = r.delivery;
    out.push(`Upstream buffering: the text came in ${d.arrivals} burst${d.arrivals === 1 ? '' : 's'} (up to ${d.eventsPerArrival.max} events at once, ${Math.round(d.largestArrivalShare * 100)} % of it in the largest) — something between the model and the page holds the stream back.`);
    const hints = r.upstreamHints || [];
    const enc = hints.find((h) => h.startsWith('content-encoding'));
    const proxies = hints.filter((h) => !h.includes(':'));
    if (enc) out.push(`The stream is compressed (${enc.split(': ')[1]}): do not compress text/event-stream, or flush the compressor after every event.`);
    if (hints.includes('x-accel-buffering: no')) out.push('The server\'s X-Accel-Buffering: no reached the page, so no nginx read it: the buffer is elsewhere (a CDN, an ingress, middleware).');
    else out.push('Behind nginx: send X-Accel-Buffering: no with the stream (or proxy_buffering off for this location); elsewhere turn off response buffering and flush after every event.');
    if (proxies.length) out.push(`In the path: ${proxies.join(', ')}.`);
  }
  if (r.buffered) out.push('The UI held the answer back (first paint after nearly all text had arrived): render text as it arrives.');
  return out.join(' ');
}

/** One Ask: the same scenario to every pane. */
async function ask(scenario, clickTimeStamp) {
  await ready;
  askNo++;
  clickEpoch = performance.timeOrigin + clickTimeStamp;
  let done;
  current = { scenario, load: loadOn ? loadWanted : 0, records: {}, done: () => done() };
  const finished = new Promise((r) => (done = r));
  for (const p of PANES) {
    const s = state[p.kind];
    Object.assign(s, { ticks: [], record: null, status: '' });
    s.send({ type: 'ask', ask: askNo, scenario, clickEpoch });
  }
  schedule(true);
  await finished;
  return current;
}

document.getElementById('controls').addEventListener('submit', (e) => {
  e.preventDefault();
  // The submit's timeStamp is the user's action (Enter or the click on Ask).
  ask(document.getElementById('scenario').value, e.timeStamp);
});

// Background load: N concurrent requests that keep the server's generation slots busy (plain
// fetch, not measured), so the panes' requests wait in its queue. Browsers open at most 6
// HTTP/1.1 connections per host: the load is split over both loopback names so each keeps a
// connection free for its panes (5 here next to the janky pane, 3 next to the three framed
// ones), else a pane would wait in the browser's connection pool instead of the server queue.
const LOAD_HOSTS = altHost ? [[location.origin, 5], [location.origin.replace(location.hostname, altHost), 3]] : [[location.origin, 5]];
const MAX_LOAD = LOAD_HOSTS.reduce((n, h) => n + h[1], 0);
document.getElementById('loadN').max = String(MAX_LOAD);
let loadOn = false;
let loadWanted = 0;
let loadAbort = null;
let loadRunning = 0;
const loadBtn = document.getElementById('load');
const loadState = document.getElementById('loadState');
function loadLoop(origin, signal) {
  loadRunning++;
  const once = () =>
    fetch(origin + '/v1/chat/completions?prefill_ms=100&gap_ms=30&tokens=60', { method: 'POST', body: '{"stream":true}', signal })
      .then((res) => res.arrayBuffer())
      .catch(() => null)
      .then(() => (signal.aborted ? loadRunning-- : once()));
  once();
}
function setLoad(on, n) {
  if (loadAbort) loadAbort.abort();
  loadAbort = null;
  loadOn = on;
  loadWanted = on ? n : 0;
  loadBtn.setAttribute('aria-pressed', String(on));
  loadBtn.textContent = on ? 'Stop load' : 'Start load';
  loadState.textContent = on ? `${n} background requests running` : '';
  if (!on) return;
  loadAbort = new AbortController();
  let left = n;
  for (const [origin, cap] of LOAD_HOSTS) {
    for (let i = 0; i < cap && left > 0; i++, left--) loadLoop(origin, loadAbort.signal);
  }
}
loadBtn.addEventListener('click', () => setLoad(!loadOn, Math.max(1, Math.min(MAX_LOAD, Number(document.getElementById('loadN').value) || 8))));
addEventListener('resize', () => schedule(true));

// For the Playwright proof (tests/e2e/demo.spec.js) and the curious: the finished asks.
window.demo = { history, ready, setLoad };
