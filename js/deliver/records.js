// Where finished records go: the core hands them over as one JSON text; each goes to the app's
// `onRecord`, and the core's beacon queue (which holds the same records for the collector) is
// told to send when it says so.

/**
 * @param {import('../core.js').Core} core
 * @param {((record: import('../index').RumRecord) => void) | null} onRecord
 * @param {import('./transport.js').Transport | null} transport
 * @param {(key: string, message: string, err?: unknown) => void} warnOnce
 * @returns {() => void}  deliver(): hands on what finished since the last call. Reached from
 *   timers, frame and stream callbacks: nothing escapes into the page.
 */
export function makeDeliver(core, onRecord, transport, warnOnce) {
  return function deliver() {
    const records = core.fenced((c) => {
      const text = c.take_records();
      return text ? JSON.parse(text) : null;
    }, null);
    if (!records) return;
    for (const r of records) {
      if (onRecord) {
        try {
          onRecord(r);
        } catch (e) {
          warnOnce('onRecord', 'onRecord threw (contained)', e);
        }
      }
    }
    if (transport) transport.schedule(); // fenced inside
  };
}
