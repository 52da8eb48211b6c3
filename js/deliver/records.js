// Where finished records go. The core hands each record over once (Core::take_records: a line
// per record — `F` final or `S` a `partial` snapshot of a request still running, made as the
// page hides; its 16-hex-digit id; its JSON text); this file gives the final ones to the app's `onRecord` and, with a
// collector, every one to the beacon queue (deliver/transport.js, loaded with a collector) —
// through the app's `beforeSend` when it has one. A text is parsed only when something needs
// the object, and then once: `onRecord` gets that parse, and `beforeSend` a copy of it made
// before `onRecord` runs, so each sees the record as the core made it, and what `beforeSend`
// changes goes to the collector only. The queue needs no parse at all: the id comes along.

/**
 * @param {import('../core.js').Core} core
 * @param {{ onRecord: ((record: import('../index').RumRecord) => void) | null,
 *   beforeSend: ((record: import('../index').RumRecord) => unknown) | null }} opts
 * @param {import('./transport.js').Transport | null} transport
 * @param {(key: string, message: string, err?: unknown) => void} warnOnce
 * @returns {() => void}  deliver(): hands on what finished since the last call. Reached from
 *   timers, frame and stream callbacks: nothing escapes into the page.
 */
export function makeDeliver(core, opts, transport, warnOnce) {
  const { onRecord, beforeSend } = opts;
  const toSend = transport && beforeSend ? sendable(beforeSend, warnOnce) : null;
  return function deliver() {
    const text = core.fenced((c) => c.take_records(), '');
    if (text) {
      const t = performance.now();
      // JSON text holds no raw line break: one record per line.
      for (const line of text.split('\n')) {
        if (!line) continue;
        const snapshot = line[0] === 'S';
        const id = line.slice(1, 17);
        const json = line.slice(17);
        const rec = !snapshot && onRecord ? parse(json, warnOnce) : null;
        if (transport) {
          // beforeSend's own copy, made before onRecord can change `rec`.
          const out = toSend ? toSend(rec ? copy(rec, json) : parse(json, warnOnce)) : json;
          if (out) transport.push(id, out, t);
        }
        if (rec) {
          try {
            onRecord(rec);
          } catch (e) {
            warnOnce('onRecord', 'onRecord threw (contained)', e);
          }
        }
      }
    }
    // The records for the collector are queued: sent when the queue says so.
    if (transport) transport.schedule(); // fenced inside
  };
}

/** A record text as the object onRecord and beforeSend get (null: not JSON, never expected). */
function parse(json, warnOnce) {
  try {
    return JSON.parse(json);
  } catch (e) {
    warnOnce('record', 'a record could not be read (contained)', e);
    return null;
  }
}

/** A deep copy of parsed record `rec` (plain JSON data); its text again where structuredClone is missing. */
function copy(rec, json) {
  return typeof structuredClone == 'function' ? structuredClone(rec) : JSON.parse(json);
}

/**
 * The app's `beforeSend` applied to a record: the text to queue, or null to drop it. It runs
 * synchronously (the page may be unloading: its urgent flush follows at once), once per record
 * — a `partial` snapshot on page hide and its completed record are one each. What it returns is
 * queued (false/null: dropped; undefined: the record as edited in place); a hook that throws or
 * returns anything else drops that record: it may have been there to scrub it.
 * @returns {(rec: object | null) => string | null}
 */
function sendable(beforeSend, warnOnce) {
  return (rec) => {
    if (!rec) return null;
    try {
      let v = beforeSend(rec);
      if (v === undefined) v = rec;
      // A Promise is not awaited (the page may be unloading).
      if (v && (typeof v !== 'object' || typeof v.then === 'function')) throw new TypeError('expected the record or false');
      return v ? JSON.stringify(v) : null;
    } catch (e) {
      warnOnce('beforeSend', 'beforeSend failed (contained); record dropped', e);
      return null;
    }
  };
}
