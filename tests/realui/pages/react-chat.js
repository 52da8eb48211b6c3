// A React 19 chat whose answer is rendered by a markdown component given by the page, re-rendered
// on every token (a state update per delta), with a cursor element in the bubble while it
// streams, a stop button and a regenerate button (a new bubble replaces the last answer).
// `opts.history`: earlier messages the conversation opens with (a chat loaded from storage);
// `opts.log(msgs, bubble)`: the element that lists the messages (default: a plain div of every
// bubble; a virtualised list renders only those in view); `opts.key(m)`: a bubble's React key
// (default its id; one that changes per token re-creates the bubble per token).
import { createElement as h, useRef, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { ask } from './harness.js';

let ids = 0;

export function mountChat(Markdown, opts = {}) {
  const plainLog = (msgs, bubble) => h('div', { className: 'log' }, msgs.map(bubble));
  const log = opts.log || plainLog;
  const history = (opts.history || []).map((m) => ({ ...m, id: ++ids }));
  function Chat() {
    const [msgs, setMsgs] = useState(history);
    const [busy, setBusy] = useState(false);
    const ctl = useRef(null);
    const input = useRef(null);
    const last = (f) => setMsgs((m) => m.slice(0, -1).concat(f(m[m.length - 1])));
    async function run(prompt, history) {
      const ac = new AbortController();
      ctl.current = ac;
      setBusy(true);
      setMsgs([...history, { id: ++ids, role: 'assistant', text: '', streaming: true }]);
      for await (const d of ask(prompt, ac.signal)) last((m) => ({ ...m, text: m.text + d }));
      last((m) => ({ ...m, streaming: false }));
      setBusy(false);
    }
    const send = (e) => {
      e.preventDefault();
      const p = input.current.value.trim();
      if (!p || busy) return;
      input.current.value = '';
      run(p, [...msgs, { id: ++ids, role: 'user', text: p }]);
    };
    const regenerate = () => {
      const i = msgs.map((m) => m.role).lastIndexOf('user');
      run(msgs[i].text, msgs.slice(0, i + 1));
    };
    return h(
      'div',
      { className: 'app' },
      log(msgs, (m) =>
        h(
          'div',
          { key: opts.key ? opts.key(m) : m.id, className: 'msg ' + m.role },
          h('b', null, m.role === 'user' ? 'You' : 'Assistant'),
          m.role === 'user' ? h('p', null, m.text) : h('div', { className: 'md' }, h(Markdown, null, m.text)),
          m.streaming ? h('span', { className: 'cursor' }, '▍') : null,
        ),
      ),
      h(
        'form',
        { onSubmit: send },
        h('textarea', { ref: input, name: 'prompt', onKeyDown: (e) => e.key === 'Enter' && !e.shiftKey && send(e) }),
        busy ? h('button', { type: 'button', className: 'stop', onClick: () => ctl.current.abort() }, 'Stop') : h('button', { type: 'submit', className: 'send' }, 'Send'),
        !busy && msgs.length ? h('button', { type: 'button', className: 'regenerate', onClick: regenerate }, 'Regenerate') : null,
      ),
    );
  }
  createRoot(document.getElementById('root')).render(h(Chat));
}
