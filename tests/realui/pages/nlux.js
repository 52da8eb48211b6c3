// NLUX (@nlux/react, React 18 — its peer range): AiChat with a streaming adapter on the scripted
// server; NLUX parses the markdown itself as it streams and types it in (its own animation).
// It has a stop button (which stops the display, not the adapter's request) and no regenerate:
// this page streams turns only.
import { createElement as h } from 'react';
import { createRoot } from 'react-dom/client';
import { AiChat } from '@nlux/react';
import { ask } from './harness.js';

const adapter = {
  streamText: async (message, observer) => {
    try {
      for await (const d of ask(message.trim())) observer.next(d);
      observer.complete();
    } catch (e) {
      observer.error(e);
    }
  },
};

createRoot(document.getElementById('root')).render(h(AiChat, { adapter, displayOptions: { height: 600 } }));
