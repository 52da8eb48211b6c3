// Where finished records go: the core hands them over as JSON text, one per line; each goes
// to the app's `onRecord`. With a collector the core hands the same records out once more,
// for the beacon queue (deliver/transport.js, loaded with a collector, takes them — through
// the app's `beforeSend` — when told to schedule).

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
      // One record per line, and JSON text never holds a raw newline: the lines are an array.
      return text && onRecord ? JSON.parse('[' + text.replace(/\n/g, ',') + ']') : null;
    }, null);
    for (const r of records || []) {
      try {
        onRecord(r);
      } catch (e) {
        warnOnce('onRecord', 'onRecord threw (contained)', e);
      }
    }
    // The records for the collector: into the beacon queue (through beforeSend), then sent
    // when it says so.
    if (transport) transport.schedule(); // fenced inside
  };
}
