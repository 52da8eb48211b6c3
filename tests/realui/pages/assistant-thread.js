// An assistant-ui (@assistant-ui/react) chat: its local runtime with a ChatModelAdapter that
// streams from the scripted server, the thread built from its primitives (messages, composer
// with send and cancel, the action bar's reload = regenerate); each message's parts rendered by
// MessagePrimitive.Parts with the `components` the page gives (none: the library's own).
import { createElement as h } from 'react';
import { createRoot } from 'react-dom/client';
import {
  ActionBarPrimitive,
  AssistantRuntimeProvider,
  ComposerPrimitive,
  MessagePrimitive,
  ThreadPrimitive,
  useLocalRuntime,
} from '@assistant-ui/react';
import { ask } from './harness.js';

const adapter = {
  async *run({ messages, abortSignal }) {
    const user = messages.filter((m) => m.role === 'user').pop();
    const prompt = user.content.map((p) => (p.type === 'text' ? p.text : '')).join('').trim();
    let text = '';
    for await (const d of ask(prompt, abortSignal)) {
      text += d;
      yield { content: [{ type: 'text', text }] };
    }
  },
};

export function mountThread(components) {
  const UserMessage = () => h(MessagePrimitive.Root, { className: 'msg user' }, h('b', null, 'You'), h(MessagePrimitive.Parts));
  const AssistantMessage = () =>
    h(
      MessagePrimitive.Root,
      { className: 'msg assistant' },
      h('b', null, 'Assistant'),
      h('div', { className: 'md' }, h(MessagePrimitive.Parts, { components })),
      h(ActionBarPrimitive.Root, { hideWhenRunning: true }, h(ActionBarPrimitive.Reload, { className: 'regenerate' }, 'Regenerate')),
    );

  function App() {
    const runtime = useLocalRuntime(adapter);
    return h(
      AssistantRuntimeProvider,
      { runtime },
      h(
        ThreadPrimitive.Root,
        { className: 'app' },
        h(ThreadPrimitive.Viewport, { className: 'log' }, h(ThreadPrimitive.Messages, { components: { UserMessage, AssistantMessage } })),
        h(
          ComposerPrimitive.Root,
          null,
          h(ComposerPrimitive.Input, { name: 'prompt' }),
          h(ThreadPrimitive.If, { running: false }, h(ComposerPrimitive.Send, { className: 'send' }, 'Send')),
          h(ThreadPrimitive.If, { running: true }, h(ComposerPrimitive.Cancel, { className: 'stop' }, 'Stop')),
        ),
      ),
    );
  }

  createRoot(document.getElementById('root')).render(h(App));
}
