// How the SDK speaks to the page's developer: console.warn, prefixed, and never a throw. Bad
// configuration and internal failures are reported once; the host page never sees an error.

/** One console.warn (a console that throws must not break anything). */
export function warn(message, err) {
  try {
    console.warn('llm-rum: ' + message, err === undefined ? '' : err);
  } catch {
    /* nowhere to say it */
  }
}

/**
 * A warner that says each `key`'s message once per init() (a predicate that throws on every
 * request is one warning, not thousands).
 * @returns {(key: string, message: string, err?: unknown) => void}
 */
export function warnerOnce() {
  const said = new Set();
  return (key, message, err) => {
    if (said.has(key)) return;
    said.add(key);
    warn(message, err);
  };
}
