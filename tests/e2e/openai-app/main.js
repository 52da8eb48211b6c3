// A real app bundle: the `openai` npm client and the llm-rum package, bundled by Vite the way
// users bundle them (the wasm loaded through `new URL(..., import.meta.url)`).
import OpenAI from 'openai';
import { init } from 'llm-rum';

window.records = [];
window.ready = (async () => {
  window.rum = await init({ patchGlobals: false, onRecord: (r) => window.records.push(r) });
  // openai-node captures fetch at construction: hand it the instrumented one.
  window.client = new OpenAI({ baseURL: location.origin + '/v1', apiKey: 'x', dangerouslyAllowBrowser: true, fetch: window.rum.fetch });
  document.getElementById('status').textContent = window.rum.active ? 'ready' : 'inactive';
})();

/** Streams one answer with the client; returns the text it assembled and the usage chunk. */
window.ask = async (model) => {
  const stream = await window.client.chat.completions.create({
    model,
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'Tell me about streaming.' }],
  });
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content || '';
    if (chunk.usage) usage = chunk.usage;
  }
  return { text, usage };
};

/** Like ask(), but reports how the client's stream ended: { text, error } (error: its name). */
window.askCatching = async (model) => {
  let text = '';
  try {
    const stream = await window.client.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content: 'Tell me about streaming.' }] });
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content || '';
    return { text, error: null };
  } catch (e) {
    // (Class names are minified in the bundle: ask the client's own error class.)
    return { text, error: e instanceof OpenAI.APIError ? 'APIError' : String(e && e.name), message: String(e && e.message) };
  }
};
