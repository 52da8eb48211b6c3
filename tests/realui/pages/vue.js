// A plain Vue 3 chat: the answer as text (markdown shown as typed: `#`, `-`, backticks), one
// reactive update per token, a cursor element while it streams, stop and regenerate.
import { createApp, h, reactive } from 'vue';
import { ask } from './harness.js';

const state = reactive({ msgs: [], busy: false, prompt: '' });
let ctl = null;
let ids = 0;

async function run(prompt) {
  ctl = new AbortController();
  state.busy = true;
  const m = reactive({ id: ++ids, role: 'assistant', text: '', streaming: true });
  state.msgs.push(m);
  for await (const d of ask(prompt, ctl.signal)) m.text += d;
  m.streaming = false;
  state.busy = false;
}

function send() {
  const p = state.prompt.trim();
  if (!p || state.busy) return;
  state.prompt = '';
  state.msgs.push({ id: ++ids, role: 'user', text: p });
  run(p);
}

function regenerate() {
  const i = state.msgs.map((m) => m.role).lastIndexOf('user');
  const prompt = state.msgs[i].text;
  state.msgs.splice(i + 1);
  run(prompt);
}

createApp({
  render: () =>
    h('div', { class: 'app' }, [
      h(
        'div',
        { class: 'log' },
        state.msgs.map((m) =>
          h('div', { key: m.id, class: 'msg ' + m.role }, [
            h('b', m.role === 'user' ? 'You' : 'Assistant'),
            h('div', { class: 'text', style: 'white-space: pre-wrap' }, m.text),
            m.streaming ? h('span', { class: 'cursor' }) : null,
          ]),
        ),
      ),
      h('form', { onSubmit: (e) => (e.preventDefault(), send()) }, [
        h('textarea', {
          name: 'prompt',
          value: state.prompt,
          onInput: (e) => (state.prompt = e.target.value),
          onKeydown: (e) => e.key === 'Enter' && !e.shiftKey && (e.preventDefault(), send()),
        }),
        state.busy ? h('button', { type: 'button', class: 'stop', onClick: () => ctl.abort() }, 'Stop') : h('button', { type: 'submit', class: 'send' }, 'Send'),
        !state.busy && state.msgs.length ? h('button', { type: 'button', class: 'regenerate', onClick: regenerate }, 'Regenerate') : null,
      ]),
    ]),
}).mount('#root');
