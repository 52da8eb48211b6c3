//! Closed sets a request's record reports by name: how it ended (`outcome`), where its trace
//! id came from (`traceSource`), which browser API carried it (`transport`).

/// How the request ended. `Partial` = the page was hidden/unloaded while it still ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Aborted,
    Error,
    Partial,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Aborted => "aborted",
            Outcome::Error => "error",
            Outcome::Partial => "partial",
        }
    }
    /// How an EventSource attempt ended, before `Timeline::on_end` judges completeness: the
    /// app's `close()` is the user's abort, a dropped connection an error (either becomes `Ok`
    /// when the stream's end marker had arrived).
    pub fn eventsource_end(closed_by_app: bool) -> Outcome {
        if closed_by_app {
            Outcome::Aborted
        } else {
            Outcome::Error
        }
    }
    /// The code the JS glue passes (kept numeric so no string crosses per request end):
    /// 0 ok, 1 aborted, 2 error, 3 partial — and `FORGET`, which is no outcome at all.
    /// js/capture/requests.js names the same codes (tests/wire_contract.rs compares them).
    pub fn from_code(code: u32) -> Outcome {
        match code {
            0 => Outcome::Ok,
            1 => Outcome::Aborted,
            3 => Outcome::Partial,
            _ => Outcome::Error,
        }
    }
}

/// The facade's code for "forget the request, no record": it turned out not to be measurable
/// (an opaque response, an EventSource the browser refused to construct).
pub const FORGET: u32 = 4;

/// The facade's code for "seen up to here": the early tap (js/capture/tap.js) kept what its
/// bound allows of a request made before the core was in, and no more. The record ends here,
/// `partial`, and its `unseen` says `end` (issue 27: never a wrong number).
pub const UNSEEN_REST: u32 = 5;

/// `record.unseen`: what the SDK could not see of a request, by name (js/index.d.ts `Unseen`
/// names the same; tests/wire_contract.rs compares them). `firstPaint`: answer text arrived
/// before paint observation watched the request, so its first paint (and what is measured from
/// it) is not reported (record/seen.rs); `end`: the
/// record covers the stream only up to `marks.end` (`UNSEEN_REST`).
pub const UNSEEN_FIRST_PAINT: &str = "firstPaint";
pub const UNSEEN_END: &str = "end";
pub const UNSEEN_ALL: [&str; 2] = [UNSEEN_FIRST_PAINT, UNSEEN_END];

/// How the answer element was known (`record.paintSource`), by the facade's code
/// (js/codes.js names the same; tests/wire_contract.rs compares them): not known (none named,
/// or auto mode found none: closed shadow roots, canvas, no text on the page), named by the app
/// (`observe` option or `rum.observe`), or found by auto mode.
pub const PAINT_NONE: u32 = 0;
pub const PAINT_OBSERVED: u32 = 1;
pub const PAINT_AUTO: u32 = 2;

/// `record.paintSource` for a code.
pub fn paint_source_name(code: u32) -> &'static str {
    match code {
        PAINT_OBSERVED => "observed",
        PAINT_AUTO => "auto",
        _ => "none",
    }
}

/// Where the record's trace id came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceSource {
    /// We generated it and sent it in `traceparent`.
    Propagated,
    /// The app set its own `traceparent`; we adopted it.
    App,
    /// Nothing was sent (cross-origin, not allow-listed); the server reported its trace.
    Server,
    /// Nothing was sent and the server reported nothing: the ids link to nothing.
    None,
}

impl TraceSource {
    pub fn as_str(self) -> &'static str {
        match self {
            TraceSource::Propagated => "propagated",
            TraceSource::App => "app",
            TraceSource::Server => "server",
            TraceSource::None => "none",
        }
    }
}

/// Which browser API carried the request (`record.transport`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    Fetch,
    EventSource,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Fetch => "fetch",
            Via::EventSource => "eventsource",
        }
    }
}
