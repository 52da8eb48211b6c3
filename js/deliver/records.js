// Where finished records go: the core hands them over as JSON text; each goes to the app's
// `onRecord`, and the core's beacon queue holds the same records for the collector — or, with
// `beforeSend`, hands them out once more for the hook, and takes back what it returns. The
// transport is told to send when the core says so.

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
  const { onRecord, beforeSend } = opts; // beforeSend: only with a collector (options.js)

  // beforeSend runs after onRecord (which sees every record as measured, for the page's own
  // use), on its own copy, once per record on its way to the collector — a `partial`
  // snapshot on page hide and its completed record are one each. Synchronous: the page may
  // be unloading, its urgent flush follows at once. What it returns goes to the core's
  // queue (false/null: dropped; undefined: the copy as edited in place); a hook that throws
  // or returns anything else drops that record: it may have been there to scrub it.
  const sendEdited = (r) => {
    let v;
    try {
      v = beforeSend(r);
      if (v === undefined) v = r;
      // A Promise is not awaited (the page may be unloading).
      if (v && (typeof v !== 'object' || typeof v.then === 'function')) throw new TypeError('expected the record or false');
      v = v && JSON.stringify(v); // one JSON text is one line, as transport_queue takes them
    } catch (e) {
      warnOnce('beforeSend', 'beforeSend failed (contained); record dropped', e);
      return;
    }
    if (v) core.fenced((c) => c.transport_queue(v, performance.now()));
  };

  return function deliver() {
    const taken = core.fenced((c) => {
      const text = c.take_records(false);
      // With beforeSend: the records (and partial snapshots) on their way to the collector.
      const out = beforeSend ? c.take_records(true) : '';
      return text || out ? [text ? JSON.parse(text) : [], out ? JSON.parse(out) : []] : null;
    }, null);
    if (!taken) return;
    const [records, outgoing] = taken;
    for (const r of records) {
      if (onRecord) {
        try {
          onRecord(r);
        } catch (e) {
          warnOnce('onRecord', 'onRecord threw (contained)', e);
        }
      }
    }
    for (const r of outgoing) sendEdited(r);
    // The core queued the records for the collector (beforeSend's through transport_queue);
    // send when it says so.
    if (transport) transport.schedule(); // fenced inside
  };
}
