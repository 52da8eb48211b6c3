// react-markdown re-rendered per token, each bubble keyed by its content (the key changes with
// the text's length, a list keyed by content): React unmounts the answer's bubble and mounts a
// new one on every token, so the element showing the answer is a new node after each token.
import Markdown from 'react-markdown';
import { mountChat } from './react-chat.js';

mountChat(Markdown, { key: (m) => `${m.id}:${m.text.length}` });
