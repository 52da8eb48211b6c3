// A real react-dom chat (React 19, createRoot): each state update re-renders the message list,
// and React reconciles the answer's text node in place. Bundled by tests/e2e/global-setup.js
// into tests/e2e/pages/react-app/chat.js for the auto-mode scenarios (pages/scenarios.js).
import { createElement as h, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';

/** Mounts a chat into `el`; returns `{ say(role, text), append(delta) }`. */
export function mountChat(el) {
  let api = null;
  function Chat() {
    const [messages, setMessages] = useState([]);
    useEffect(() => {
      api = {
        say: (role, text) => setMessages((m) => [...m, { role, text }]),
        append: (d) => setMessages((m) => m.slice(0, -1).concat({ ...m[m.length - 1], text: m[m.length - 1].text + d })),
      };
    }, []);
    return h(
      'div',
      { className: 'chat' },
      messages.map((m, i) => h('div', { key: i, className: 'msg ' + m.role }, h('b', null, m.role === 'user' ? 'You' : 'Assistant'), h('div', { className: 'text' }, m.text))),
    );
  }
  createRoot(el).render(h(Chat));
  return new Promise((resolve) => {
    const wait = () => (api ? resolve(api) : setTimeout(wait, 5));
    wait();
  });
}
