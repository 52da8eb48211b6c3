// Where finished records go: the core hands them over as JSON text; each goes to the app's
// `onRecord`, and the core's beacon queue holds the same records for the collector — or, with
// `beforeSend`, hands them out once more for the hook (deliver/transport.js, loaded with a
// collector, runs it). The transport is told to send when the core says so.

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
  const { onRecord } = opts;
  return function deliver() {
    // Taken either way (that drains the core's list); parsed only for an onRecord to read.
    const records = core.fenced((c) => {
      const text = c.take_records(false);
      return text && onRecord ? JSON.parse(text) : null;
    }, null);
    for (const r of records || []) {
      try {
        onRecord(r);
      } catch (e) {
        warnOnce('onRecord', 'onRecord threw (contained)', e);
      }
    }
    // The records for the collector: through beforeSend (the transport runs it), then sent
    // when the core says so.
    if (transport) transport.schedule(); // fenced inside
  };
}
