// The four ways a chat UI renders a streamed answer, shared by the demo page and the
// paint-measurement tests (tests/e2e/paint.spec.js) so both show the same behaviour:
//   streamed  — appends each token as it arrives;
//   buffered  — shows nothing until the stream ends, then the whole answer;
//   throttled — updates the DOM at most every 200 ms (a UI throttle);
//   janky     — re-renders the whole message as markdown per token, and on some tokens does
//               ~120 ms of synchronous work (a heavy markdown/highlighting pass).
// Plus `markdown`: a well-behaved renderer that re-renders the message as HTML per token, and
// `raf`: tokens batched into one DOM write per animation frame.

/** Reads an OpenAI chat-completions SSE body; calls onDelta(text) per content delta. */
export async function readDeltas(res, onDelta) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = ev
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      if (!data || data === '[DONE]') continue;
      const j = JSON.parse(data);
      for (const c of j.choices || []) if (c.delta && c.delta.content) onDelta(c.delta.content);
    }
  }
}

const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const inline = (s) =>
  esc(s)
    .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
    .replace(/\*([^*]+)\*/g, '<em>$1</em>')
    .replace(/`([^`]+)`/g, '<code>$1</code>');

/** A small markdown → HTML renderer (headings, lists, fenced code, emphasis, paragraphs). */
export function markdown(text) {
  const out = [];
  let code = null;
  let list = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) {
      if (code === null) code = [];
      else {
        out.push('<pre><code>' + esc(code.join('\n')) + '</code></pre>');
        code = null;
      }
      continue;
    }
    if (code !== null) {
      code.push(line);
      continue;
    }
    const item = /^- (.*)/.exec(line);
    if (item && !list) out.push('<ul>');
    if (!item && list) out.push('</ul>');
    list = !!item;
    if (item) out.push('<li>' + inline(item[1]) + '</li>');
    else if (/^#+ /.test(line)) out.push('<h3>' + inline(line.replace(/^#+ /, '')) + '</h3>');
    else if (line.trim()) out.push('<p>' + inline(line) + '</p>');
  }
  if (code !== null) out.push('<pre><code>' + esc(code.join('\n')) + '</code></pre>');
  if (list) out.push('</ul>');
  return out.join('');
}

/** Busy-waits `ms` on the main thread (what a heavy synchronous render does to a page). */
export function block(ms) {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/**
 * A renderer of `kind` writing into `el`: { push(delta), end() }. Options: `throttleMs` (200),
 * `jankMs` (120), `jankEvery` (every Nth token is heavy, counting from the first: 10).
 */
export function makeRenderer(kind, el, { throttleMs = 200, jankMs = 120, jankEvery = 10 } = {}) {
  let text = '';
  let n = 0;
  switch (kind) {
    case 'streamed':
      return { push: (d) => el.append(d), end() {} };
    case 'buffered':
      return {
        push: (d) => void (text += d),
        end: () => void (el.textContent = text),
      };
    case 'throttled': {
      let timer = 0;
      let last = -Infinity;
      const flush = () => {
        timer = 0;
        last = performance.now();
        el.textContent = text;
      };
      return {
        push(d) {
          text += d;
          if (timer) return;
          timer = setTimeout(flush, Math.max(0, last + throttleMs - performance.now()));
        },
        end() {
          if (timer) clearTimeout(timer);
          flush();
        },
      };
    }
    case 'raf': {
      // Batches tokens and writes them in its next requestAnimationFrame callback (how many
      // UIs keep per-token renders to one per frame).
      let queued = 0;
      const flush = () => {
        queued = 0;
        el.textContent = text;
      };
      return {
        push(d) {
          text += d;
          if (!queued) queued = requestAnimationFrame(flush);
        },
        end() {
          if (queued) cancelAnimationFrame(queued);
          flush();
        },
      };
    }
    case 'replace':
      // Markdown re-rendered into a NEW answer element per token, replacing the last one (a
      // list keyed by content, a vanilla page that rebuilds its message node): the element a
      // measurement bound to is gone after every token.
      return {
        push(d) {
          text += d;
          const fresh = el.cloneNode(false);
          fresh.innerHTML = markdown(text);
          el.replaceWith(fresh);
          el = fresh;
        },
        end() {},
      };
    case 'markdown':
    case 'janky':
      return {
        push(d) {
          text += d;
          if (kind === 'janky' && n % jankEvery === 0) block(jankMs);
          n++;
          el.innerHTML = markdown(text);
        },
        end: () => void (el.innerHTML = markdown(text)),
      };
    default:
      throw new Error('unknown renderer ' + kind);
  }
}
