// Which requests are measured: the `match` option, and never the SDK's own beacons.

import { base } from '../options.js';

/** Not measured. */
export const SKIP = 0;
/** Measured if its response turns out to be a stream (the default without `match`). */
export const IF_STREAM = 1;
/** Measured whatever the response (a `match`ed request: HTTP errors are recorded too). */
export const ALWAYS = 2;

/**
 * @param {{ collector: string | null, match: import('../index').Matcher[] | null }} opts
 * @param {(key: string, message: string, err?: unknown) => void} warnOnce
 * @returns {(url: string, method: string) => number}  SKIP, IF_STREAM or ALWAYS for an
 *   absolute URL
 */
export function makeMatcher(opts, warnOnce) {
  const isOwn = (url) => opts.collector !== null && url.startsWith(new URL(opts.collector, base()).href);
  if (!opts.match) return (url) => (isOwn(url) ? SKIP : IF_STREAM);
  return (url, method) => {
    if (isOwn(url)) return SKIP;
    for (const m of opts.match) {
      try {
        if (typeof m === 'string' ? url.includes(m) : m instanceof RegExp ? m.test(url) : m(url, { method })) return ALWAYS;
      } catch (e) {
        warnOnce('match', 'a match predicate threw; treated as no match', e);
      }
    }
    return SKIP;
  };
}
