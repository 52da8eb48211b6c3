// A long conversation in a virtualised list (react-virtuoso, as chat UIs use it): 44 earlier
// messages loaded with the chat, of which only those in view are in the DOM; new answers stream
// in at the bottom, each rendered by react-markdown re-rendered per token, and the list follows
// them (`followOutput`: it scrolls as the last item grows, mounting and unmounting the items
// that enter and leave the view while the answer streams). Virtuoso measures each item with a
// ResizeObserver and positions it absolutely in a scrolled container: the answer element is
// one item among items that mount, unmount and move.
import { createElement as h, createRef } from 'react';
import Markdown from 'react-markdown';
import { Virtuoso } from 'react-virtuoso';
import { mountChat } from './react-chat.js';

// Earlier turns: short questions and answers of a few sentences, some with markdown.
const TOPICS = ['latency budgets', 'token streaming', 'prefill queues', 'proxy buffering', 'render cost', 'frame timing', 'tail latency', 'trace ids', 'sampling', 'backpressure', 'retries'];
const history = [];
for (let i = 0; i < 22; i++) {
  const t = TOPICS[i % TOPICS.length];
  history.push({ role: 'user', text: `Question ${i + 1}: how does ${t} show up in what users see?` });
  history.push({
    role: 'assistant',
    text: `About **${t}** (${i + 1}): it adds to the wait before the first word, or to the gaps between words.\n\nMeasure it in the browser, where the person is, and compare it with the server's own view of the same request.\n`,
  });
}

// Virtuoso measures items by their boxes: margins (which collapse) are outside them.
document.head.append(Object.assign(document.createElement('style'), { textContent: '.log .msg{margin:0;padding:8px 0}' }));

// Virtuoso follows new items (`followOutput`); an item that grows (the streaming answer) is
// followed by the page: on each change of the list's height it scrolls to the last item's end
// (the test never scrolls up). Virtuoso's own `autoscrollToBottom()` only acts within 100 ms of
// a new item: in WebKitGTK the growing answer was then left below the view (not rendered at
// all: one run's answer was never in the DOM while it streamed).
const list = createRef();
const follow = () => list.current && list.current.scrollToIndex({ index: 'LAST', align: 'end' });
const log = (msgs, bubble) =>
  h(Virtuoso, {
    ref: list,
    className: 'log',
    style: { height: 420 },
    data: msgs,
    computeItemKey: (_, m) => m.id,
    initialTopMostItemIndex: msgs.length - 1,
    followOutput: 'auto',
    totalListHeightChanged: follow,
    itemContent: (_, m) => bubble(m),
  });

mountChat(Markdown, { history, log });
