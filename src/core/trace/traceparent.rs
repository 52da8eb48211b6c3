//! W3C Trace Context `traceparent` (Level 1 §3.2, unchanged in Level 2) for the outgoing
//! request, and the response forms the core reads back to join the server's trace when it
//! propagated nothing itself: the Server-Timing entry
//! `trace;desc=00-<trace>-<span>-<flags>` (also accepted under the name `traceparent`, the
//! spelling some APM agents use) and the legacy `traceresponse` header (Trace Context Level 2
//! drafts), which share the `traceparent` value grammar.
//!
//! ```text
//! traceparent = version "-" trace-id "-" parent-id "-" trace-flags     ; version 00: 55 chars
//! version     = 2HEXDIGLC   ; "ff" is invalid
//! trace-id    = 32HEXDIGLC  ; all zeros is invalid
//! parent-id   = 16HEXDIGLC  ; all zeros is invalid
//! trace-flags = 2HEXDIGLC   ; bit 0 = sampled
//! ```
//! Upper-case hex is invalid (HEXDIGLC). For versions above 00 the spec's forward-compatibility
//! rule applies: parse the first 55 characters the version-00 way and require the string to end
//! there or continue with `-` (§3.2.4 "Versioning of traceparent"). Surrounding OWS (space, tab)
//! is trimmed, as the W3C test suite's `test_traceparent_ows_handling` expects.
//!
//! Ids are random bytes handed in by the caller (the core has no randomness of its own: the JS
//! facade draws them from `crypto.getRandomValues`); we only ever emit version 00 with the sampled flag (no Level 2 `random` flag, so Level 1
//! receivers see nothing unexpected).

use alloc::string::String;
use crate::core::util::hex;
use crate::core::trace::server_timing::ServerTimingEntry;

/// `trace-flags` bit 0.
pub const FLAG_SAMPLED: u8 = 0x01;
/// Length of a version-00 `traceparent` value.
pub const HEADER_LEN: usize = 55;

/// A parsed or generated trace context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceContext {
    pub trace_id: [u8; 16],
    /// The span (`parent-id` in the header) of the request this context identifies.
    pub span_id: [u8; 8],
    pub flags: u8,
}

/// All-zero ids are invalid (§3.2.2.3, §3.2.2.4); a zero draw is replaced by setting the last
/// byte to 1 — deterministic, and a 2^-128 / 2^-64 event, so the bias is irrelevant.
fn non_zero<const N: usize>(mut id: [u8; N]) -> [u8; N] {
    if id.iter().all(|&b| b == 0) {
        if let Some(last) = id.last_mut() {
            *last = 1;
        }
    }
    id
}

impl TraceContext {
    /// A new root context from 24 random bytes: bytes 0..16 are the trace id, 16..24 the span
    /// id. Flags carry only `sampled`.
    pub fn from_random(bytes: &[u8; 24], sampled: bool) -> TraceContext {
        let mut trace_id = [0u8; 16];
        let mut span_id = [0u8; 8];
        trace_id.copy_from_slice(&bytes[..16]);
        span_id.copy_from_slice(&bytes[16..]);
        TraceContext {
            trace_id: non_zero(trace_id),
            span_id: non_zero(span_id),
            flags: if sampled { FLAG_SAMPLED } else { 0 },
        }
    }

    /// The same trace and flags with a new span id from 8 random bytes.
    pub fn new_span(&self, random8: &[u8; 8]) -> TraceContext {
        TraceContext { span_id: non_zero(*random8), ..*self }
    }

    /// Parses a `traceparent` value (see the module docs for the exact rules). `None` when
    /// invalid; the spec's answer to an invalid header is to start a new trace.
    pub fn parse(s: &str) -> Option<TraceContext> {
        let b = s.trim_matches([' ', '\t']).as_bytes();
        if b.len() < HEADER_LEN || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let [version] = hex::parse_exact::<1>(&b[..2])?;
        if version == 0xff {
            return None;
        }
        if b.len() > HEADER_LEN && (version == 0 || b[HEADER_LEN] != b'-') {
            return None;
        }
        let trace_id = hex::parse_exact::<16>(&b[3..35])?;
        let span_id = hex::parse_exact::<8>(&b[36..52])?;
        let [flags] = hex::parse_exact::<1>(&b[53..55])?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(TraceContext { trace_id, span_id, flags })
    }

    /// Appends the version-00 header value `00-<32 hex>-<16 hex>-<2 hex>` (55 bytes).
    pub fn write_header(&self, out: &mut String) {
        out.reserve(HEADER_LEN);
        out.push_str("00-");
        hex::push_hex(out, &self.trace_id);
        out.push('-');
        hex::push_hex(out, &self.span_id);
        out.push('-');
        hex::push_hex(out, &[self.flags]);
    }

    /// The header value as a new `String`.
    pub fn header(&self) -> String {
        let mut s = String::with_capacity(HEADER_LEN);
        self.write_header(&mut s);
        s
    }

    /// 32 lower-case hex characters (the OTLP/JSON and beacon form).
    pub fn trace_id_hex(&self) -> String {
        hex::to_hex(&self.trace_id)
    }

    /// 16 lower-case hex characters.
    pub fn span_id_hex(&self) -> String {
        hex::to_hex(&self.span_id)
    }

    pub fn sampled(&self) -> bool {
        self.flags & FLAG_SAMPLED != 0
    }
}

/// The server's trace from `Server-Timing`: the first entry named `trace` or `traceparent`
/// (ASCII case-insensitive) whose `desc` is a valid `traceparent` value.
pub fn from_server_timing(entries: &[ServerTimingEntry]) -> Option<TraceContext> {
    entries
        .iter()
        .filter(|e| {
            e.name.eq_ignore_ascii_case("trace") || e.name.eq_ignore_ascii_case("traceparent")
        })
        .find_map(|e| TraceContext::parse(e.desc.as_deref()?))
}

/// The legacy `traceresponse` header: same grammar and validation as `traceparent`.
pub fn parse_traceresponse(header: &str) -> Option<TraceContext> {
    TraceContext::parse(header)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trace::server_timing::parse_server_timing;

    // The W3C example values (Trace Context §3.2.2 / the test suite's defaults).
    const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
    const SPAN: &str = "b7ad6b7169203331";
    const VALID: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    fn p(s: &str) -> Option<TraceContext> {
        TraceContext::parse(s)
    }

    #[test]
    fn parses_the_spec_example() {
        let tc = p(VALID).unwrap();
        assert_eq!(tc.trace_id_hex(), TRACE);
        assert_eq!(tc.span_id_hex(), SPAN);
        assert_eq!(tc.flags, 1);
        assert!(tc.sampled());
        assert_eq!(tc.header(), VALID);
        let unsampled = p("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00").unwrap();
        assert!(!unsampled.sampled());
        // Unknown flag bits are kept (and ignored by `sampled`).
        let f = p("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-fe").unwrap();
        assert_eq!(f.flags, 0xfe);
        assert!(!f.sampled());
    }

    #[test]
    fn ows_is_trimmed() {
        for s in [
            " 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 ",
            "\t 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 \t",
        ] {
            assert_eq!(p(s), p(VALID), "{s:?}");
        }
    }

    #[test]
    fn version() {
        // Version ff is forbidden; illegal characters; too long / too short.
        for bad in [
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            ".0-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "0.-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "0A-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "000-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "0000-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "0-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ] {
            assert_eq!(p(bad), None, "{bad}");
        }
    }

    #[test]
    fn version_00_rejects_extra_fields() {
        for bad in [
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-.",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-the-future-will-be-like",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01.",
        ] {
            assert_eq!(p(bad), None, "{bad}");
        }
    }

    #[test]
    fn future_versions() {
        let tc = p("cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").unwrap();
        assert_eq!(tc.trace_id_hex(), TRACE);
        let tc = p(
            "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-the-future-will-be-like",
        )
        .unwrap();
        assert_eq!(tc.span_id_hex(), SPAN);
        assert!(tc.sampled());
        // We always emit version 00.
        assert_eq!(tc.header(), VALID);
        for bad in [
            "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01.what-the-future-will-be-like",
            "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0",
            "cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "cc-0af7651916cd43dd8448eb211c80319c-00000000000000000-01-x",
        ] {
            assert_eq!(p(bad), None, "{bad}");
        }
    }

    #[test]
    fn trace_id_rules() {
        for bad in [
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-.af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319.-b7ad6b7169203331-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c00-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c8031-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c0-b7ad6b7169203331-01",
        ] {
            assert_eq!(p(bad), None, "{bad}");
        }
    }

    #[test]
    fn parent_id_rules() {
        for bad in [
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0af7651916cd43dd8448eb211c80319c-.7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333.-01",
            "00-0af7651916cd43dd8448eb211c80319c-B7AD6B7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333100-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b71692033-01",
        ] {
            assert_eq!(p(bad), None, "{bad}");
        }
    }

    #[test]
    fn flags_rules() {
        for bad in [
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-.0",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0.",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0A",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-001",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-1",
        ] {
            assert_eq!(p(bad), None, "{bad}");
        }
    }

    #[test]
    fn structural_garbage() {
        for bad in [
            "",
            " ",
            "00",
            "00-0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331-01",
            "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331_01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0é",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b71692033é-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331\n01",
            "00 0af7651916cd43dd8448eb211c80319c b7ad6b7169203331 01",
            "\n00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ] {
            assert_eq!(p(bad), None, "{bad:?}");
        }
        // Every truncation and every single-byte corruption of a valid value is handled.
        for n in 0..VALID.len() {
            assert_eq!(p(&VALID[..n]), None);
        }
        for i in 0..VALID.len() {
            for c in [b'-', b'G', b'F', b' ', b'0'] {
                let mut v = VALID.as_bytes().to_vec();
                v[i] = c;
                let _ = p(std::str::from_utf8(&v).unwrap());
            }
        }
    }

    #[test]
    fn from_random_and_round_trip() {
        let mut bytes = [0u8; 24];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37).wrapping_add(5);
        }
        let tc = TraceContext::from_random(&bytes, true);
        assert_eq!(tc.trace_id, bytes[..16]);
        assert_eq!(tc.span_id, bytes[16..]);
        assert_eq!(tc.flags, 1);
        let h = tc.header();
        assert_eq!(h.len(), HEADER_LEN);
        assert_eq!(p(&h), Some(tc));
        assert_eq!(&h[3..35], tc.trace_id_hex());
        assert_eq!(&h[36..52], tc.span_id_hex());
        let mut out = String::from("x");
        tc.write_header(&mut out);
        assert_eq!(&out[1..], h);

        let unsampled = TraceContext::from_random(&bytes, false);
        assert_eq!(unsampled.flags, 0);
        assert!(p(&unsampled.header()).is_some_and(|t| !t.sampled()));
    }

    #[test]
    fn zero_random_bytes_are_fixed_up() {
        let tc = TraceContext::from_random(&[0; 24], false);
        assert_ne!(tc.trace_id, [0; 16]);
        assert_ne!(tc.span_id, [0; 8]);
        assert_eq!(tc.header(), "00-00000000000000000000000000000001-0000000000000001-00");
        assert_eq!(p(&tc.header()), Some(tc));
        // A zero trace id with a non-zero span id: only the trace id is touched.
        let mut b = [0u8; 24];
        b[20] = 9;
        let tc = TraceContext::from_random(&b, true);
        assert_eq!(tc.span_id, [0, 0, 0, 0, 9, 0, 0, 0]);
        let child = tc.new_span(&[0; 8]);
        assert_eq!(child.span_id, [0, 0, 0, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn new_span_keeps_trace_and_flags() {
        let root = p(VALID).unwrap();
        let child = root.new_span(&[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(child.trace_id, root.trace_id);
        assert_eq!(child.flags, root.flags);
        assert_eq!(child.span_id_hex(), "0102030405060708");
        assert_eq!(child.header(), "00-0af7651916cd43dd8448eb211c80319c-0102030405060708-01");
    }

    #[test]
    fn server_timing_trace_entry() {
        let mut st = Vec::new();
        parse_server_timing(
            "db;dur=3, trace;desc=garbage, \
             trace;desc=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01, app;dur=4",
            &mut st,
        );
        assert_eq!(from_server_timing(&st), p(VALID));
        // Quoted desc and the `traceparent` name.
        st.clear();
        parse_server_timing(
            "traceparent;desc=\"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00\"",
            &mut st,
        );
        let tc = from_server_timing(&st).unwrap();
        assert_eq!(tc.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(!tc.sampled());
        // Missing desc, other names, invalid values.
        st.clear();
        parse_server_timing(
            "trace, tracex;desc=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01, \
             trace;desc=\"\"",
            &mut st,
        );
        assert_eq!(from_server_timing(&st), None);
        assert_eq!(from_server_timing(&[]), None);
    }

    #[test]
    fn traceresponse_header() {
        assert_eq!(parse_traceresponse(VALID), p(VALID));
        assert_eq!(
            parse_traceresponse(" 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
            p(VALID)
        );
        assert_eq!(
            parse_traceresponse("00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"),
            None
        );
        assert_eq!(
            parse_traceresponse("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
            None
        );
    }
}
