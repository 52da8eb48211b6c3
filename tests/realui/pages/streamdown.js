// Streamdown (Vercel's streaming markdown for AI chats: completes unterminated markdown while it
// streams, memoises blocks), in the same React chat.
import { createElement as h } from 'react';
import { Streamdown } from 'streamdown';
import { mountChat } from './react-chat.js';

mountChat(({ children }) => h(Streamdown, null, children));
