// The closed sets the facade hands the core by number (so no string crosses per call), named
// once. The core reads the same codes: Outcome::from_code and FORGET in
// src/core/request/kinds.rs (and PAINT_*); tests/wire_contract.rs checks that both sides
// agree. The flush reasons are the beacon's own (deliver/queue.js names them).

// How a request ended (Core::end). The core may still judge otherwise: 'partial' while the
// page unloads.
export const OK = 0;
export const ABORTED = 1;
export const ERROR = 2;
/** End without a record: the request turned out not to be measurable. */
export const FORGET = 4;
/** Seen up to now and no further (the early tap's bound): the record ends `partial`. */
export const UNSEEN = 5;

// How the answer element was known (Core::observe): the record's `paintSource`. NONE: auto
// mode is looking for it (paint tracking on, no element yet).
export const PAINT_NONE = 0;
export const PAINT_OBSERVED = 1;
export const PAINT_AUTO = 2;

// Why a beacon is sent: its `reason`, by code, which deliver/queue.js REASONS names
// (`Beacon['reason']` in index.d.ts; tests/e2e/queue.spec.js checks the three agree). Numbers,
// not the names: the bundler inlines a number into each chunk, where a shared string would
// split off a chunk of its own that every page loads.
/** The queue's own schedule. */
export const FLUSH_TIMER = 0;
/** rum.flush() (and shutdown()). */
export const FLUSH_MANUAL = 1;
/** visibilitychange → hidden: urgent. */
export const FLUSH_HIDDEN = 2;
/** pagehide: urgent. */
export const FLUSH_PAGEHIDE = 3;
/** Back online. */
export const FLUSH_ONLINE = 4;
/** Records an earlier page load persisted. */
export const FLUSH_RESTORE = 5;
