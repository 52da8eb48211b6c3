// The app every toolchain builds (tests/e2e/toolchains.spec.js): what a new user writes — import
// llm-rum, call init(), stream one answer and render it as it arrives. One chunk handler
// blocks the main thread for 400 ms, as a heavy markdown pass would: the record must show a
// render stall blamed on the stream read it ran in (LoAF), not on the bundle it came from.
import { init, VERSION } from 'llm-rum';

const BLOCK_AT = 10; // the delta whose handler blocks
const BLOCK_MS = 400;

function block(ms) {
  const t = performance.now();
  while (performance.now() - t < ms) {
    /* busy: the page cannot paint */
  }
}

/**
 * Streams one answer from `api` (the scripted server's origin; '' = this page's) into
 * #answer. Resolves with what the test checks: whether init() is active, the record, the
 * app's own text and what the page shows. `options` go to init() as they are.
 */
export async function run(api, testId, options = {}) {
  const records = [];
  const rum = await init({ ...options, onRecord: (r) => records.push(r) });
  const el = document.getElementById('answer');
  rum.observe(el);
  const res = await fetch(`${api}/v1/chat/completions?prefill_ms=60&gap_ms=25&tokens=30&test_id=${encodeURIComponent(testId)}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'default', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  let text = '';
  let deltas = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const data = buf.slice(0, i).replace(/^data: /, '');
      buf = buf.slice(i + 2);
      if (!data.startsWith('{')) continue;
      for (const c of JSON.parse(data).choices || []) {
        if (!c.delta || !c.delta.content) continue;
        text += c.delta.content;
        el.textContent = text;
        if (++deltas === BLOCK_AT) block(BLOCK_MS);
      }
    }
  }
  for (let t = 0; !records.length && t < 100; t++) await new Promise((r) => setTimeout(r, 100));
  return { version: VERSION, active: rum.active, record: records[0] || null, text, shown: el.textContent, deltas };
}
