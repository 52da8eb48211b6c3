// One demo pane: its own llm-rum instance and one renderer (renderers.js). Used in a frame
// (pane.html, for the well-behaved panes, isolated in another renderer process) and directly
// in the demo page (the janky pane: Long Animation Frame entries, which carry the render-stall
// blame, are reported to the top-level document, not to a same-site child frame).
// `post(msg)` hands the parent what it draws: the record (the SDK's numbers), plus
// display-only ticks of when text arrived and when the DOM changed.
import { init } from '/dist/index.js';
import { readDeltas, makeRenderer } from './renderers.js';

const RENDER_OPTS = { janky: { jankMs: 300, jankEvery: 15 } };

/** Starts the pane; returns ask({ ask, scenario, clickEpoch }). */
export async function startPane(kind, answer, collector, post) {
  const epoch = () => performance.timeOrigin + performance.now();
  let ask = 0;
  const starts = []; // [ask, epoch just before its request], newest last
  // A record belongs to the newest ask whose request started before it (an answer still
  // streaming when Ask is clicked again must not be filed under the new ask).
  const askOf = (record) => (starts.findLast(([, t]) => t <= record.startEpochMs + 1) || [0])[0];
  // patchGlobals off: the demo page's own requests (background load) stay unmeasured. The
  // scripted server is this app's own backend: the stream names its model (per scenario), but
  // only the app can say whose it is (`models`; a name of its own, the conventions allow one).
  const rum = await init({
    collector,
    patchGlobals: false,
    models: [{ match: '/v1/chat/completions', provider: 'llm-rum-demo' }],
    onRecord: (record) => post({ type: 'record', ask: askOf(record), record }),
  });
  // The demo is about what each answer shows, from its very first Ask: the pane says it is
  // ready once the core is in. (An app need not wait: what it does before is measured from a
  // tap — README, "Before the core is in" — but text painted before the core came has no first
  // paint on record.)
  await rum.ready;
  let mo = null;
  return async (m) => {
    ask = m.ask;
    // The click may have happened in another frame: its time comes on the shared epoch.
    rum.markInteraction(m.clickEpoch - performance.timeOrigin);
    const el = document.createElement('div');
    if (kind === 'janky') el.className = 'md';
    answer.replaceChildren(el);
    if (mo) mo.disconnect();
    mo = new MutationObserver(() => post({ type: 'tick', ask, what: 'dom', t: epoch() }));
    mo.observe(el, { childList: true, characterData: true, subtree: true });
    rum.observe(el);
    starts.push([ask, epoch()]);
    if (starts.length > 16) starts.shift();
    try {
      const res = await rum.fetch('/v1/chat/completions?' + m.scenario, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'default', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'Explain streaming RUM' }] }),
      });
      const r = makeRenderer(kind, el, RENDER_OPTS[kind]);
      await readDeltas(res, (d) => {
        post({ type: 'tick', ask, what: 'arrive', t: epoch() });
        r.push(d);
        answer.scrollTop = 1e9;
      });
      r.end();
    } catch (err) {
      post({ type: 'error', ask, message: String(err) });
    }
  };
}
