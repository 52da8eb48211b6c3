//! Why a beacon was sent: the closed set its `reason` member takes. The facade names the
//! occasion by its code, the position in `FlushReason::ALL` (js/codes.js `FLUSH_*`), and
//! js/index.d.ts declares the names as `Beacon['reason']`; tests/wire_contract.rs checks all
//! three agree.

/// The occasion of a flush.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushReason {
    /// The queue's own schedule (`BeaconQueue::due_at`): a while after a record, or past the size.
    Timer,
    /// The app called `rum.flush()` (or `shutdown()`).
    Manual,
    /// The page became hidden (`visibilitychange`): urgent.
    Hidden,
    /// The page is being unloaded or put into the back/forward cache: urgent.
    Pagehide,
    /// The browser came back online (the queue held while offline).
    Online,
    /// Records an earlier page load could not send, restored from storage.
    Restore,
}

impl FlushReason {
    pub const ALL: [FlushReason; 6] =
        [FlushReason::Timer, FlushReason::Manual, FlushReason::Hidden, FlushReason::Pagehide, FlushReason::Online, FlushReason::Restore];

    pub fn as_str(self) -> &'static str {
        match self {
            FlushReason::Timer => "timer",
            FlushReason::Manual => "manual",
            FlushReason::Hidden => "hidden",
            FlushReason::Pagehide => "pagehide",
            FlushReason::Online => "online",
            FlushReason::Restore => "restore",
        }
    }

    /// The reason the facade passes by its code (its position in `ALL`); `None` for others.
    pub fn from_code(code: u32) -> Option<FlushReason> {
        FlushReason::ALL.get(code as usize).copied()
    }
}
