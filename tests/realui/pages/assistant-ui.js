// assistant-ui (@assistant-ui/react), each text part rendered by react-markdown (no smoothing:
// the text as it arrives).
import { createElement as h } from 'react';
import Markdown from 'react-markdown';
import { mountThread } from './assistant-thread.js';

mountThread({ Text: ({ text }) => h(Markdown, null, text) });
