// react-markdown (remark → React elements), the whole answer re-parsed and re-rendered per token.
import Markdown from 'react-markdown';
import { mountChat } from './react-chat.js';

mountChat(Markdown);
