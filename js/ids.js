// Randomness the SDK needs: 32 bytes per request (trace, span and record ids, cut by the
// core), and the tab session — an id and the sampling decision, made once per tab session.

/**
 * 32 random bytes for trace/span/record ids. Where crypto.getRandomValues is missing or throws
 * (an old or locked-down engine), Math.random: the ids must be unique, not secret (W3C Trace
 * Context §"trace-id": random, not cryptographically so).
 * @returns {Uint8Array}
 */
export function randomBytes() {
  const b = new Uint8Array(32);
  try {
    globalThis.crypto.getRandomValues(b);
  } catch {
    for (let i = 0; i < b.length; i++) b[i] = (Math.random() * 256) | 0;
  }
  return b;
}

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');

/**
 * The tab session: an id and the sampling decision, made once per tab session and kept in
 * sessionStorage so every page of the session agrees (and with its traceparent flags).
 * @param {number} rate  the `sampleRate` option, in [0, 1]
 * @returns {{ id: string, sampled: boolean }}
 */
export function tabSession(rate) {
  const key = 'llm-rum:session';
  try {
    const kept = globalThis.sessionStorage && sessionStorage.getItem(key);
    const m = kept && /^([0-9a-f]{16}):([01])$/.exec(kept);
    if (m) return { id: m[1], sampled: m[2] === '1' };
  } catch {
    /* storage blocked: decide for this page only */
  }
  const s = { id: hex(randomBytes().subarray(0, 8)), sampled: rate >= 1 || Math.random() < rate };
  try {
    if (globalThis.sessionStorage) sessionStorage.setItem(key, `${s.id}:${s.sampled ? 1 : 0}`);
  } catch {
    /* as above */
  }
  return s;
}
