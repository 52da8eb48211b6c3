//! W3C Trace Context on the server side: parse the received `traceparent`, mint ids.
//!
//! Owner of: which trace the server's span belongs to. A valid received traceparent makes the
//! server span its child (same trace id, the received span id as parent); otherwise the server
//! starts a fresh trace. The result is reported in `Server-Timing: trace;desc=...` (the Trace
//! Context response form the SDK reads, DESIGN.md §2) and in the ground truth.

use std::sync::atomic::{AtomicU64, Ordering};

/// A valid received traceparent, split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parent {
    pub trace_id: String,
    pub span_id: String,
    pub flags: String,
}

/// Parses a `traceparent` value per W3C Trace Context level 1: `vv-<32 hex>-<16 hex>-ff`,
/// lower-case hex, version `ff` invalid, all-zero ids invalid, version 00 exactly 55 chars
/// (future versions may append `-...`).
pub fn parse_traceparent(v: &str) -> Option<Parent> {
    let v = v.trim_matches([' ', '\t']);
    let b = v.as_bytes();
    if b.len() < 55 {
        return None;
    }
    let hex = |s: &[u8]| {
        s.iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    };
    let (ver, tid, sid, flags) = (&b[0..2], &b[3..35], &b[36..52], &b[53..55]);
    if b[2] != b'-'
        || b[35] != b'-'
        || b[52] != b'-'
        || !hex(ver)
        || !hex(tid)
        || !hex(sid)
        || !hex(flags)
    {
        return None;
    }
    if ver == b"ff" || (ver == b"00" && b.len() != 55) || (b.len() > 55 && b[55] != b'-') {
        return None;
    }
    if tid.iter().all(|&c| c == b'0') || sid.iter().all(|&c| c == b'0') {
        return None;
    }
    Some(Parent {
        trace_id: v[3..35].to_string(),
        span_id: v[36..52].to_string(),
        flags: v[53..55].to_string(),
    })
}

/// A random-enough u64 for ids: SplitMix64 over a per-process random seed and a counter. Not
/// cryptographic; ids only need to be unique and non-zero.
pub fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let seed = *SEED.get_or_init(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        h.write_u32(std::process::id());
        h.finish()
    });
    let mut r = crate::scenario::SplitMix64(
        seed ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0xA24B_AED4_963E_E407),
    );
    loop {
        let x = r.next_u64();
        if x != 0 {
            return x;
        }
    }
}

pub fn new_trace_id() -> String {
    format!("{:016x}{:016x}", random_u64(), random_u64())
}

pub fn new_span_id() -> String {
    format!("{:016x}", random_u64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_valid_and_rejects_invalid() {
        let ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let p = parse_traceparent(ok).unwrap();
        assert_eq!(p.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(p.span_id, "00f067aa0ba902b7");
        assert_eq!(p.flags, "01");
        assert!(
            parse_traceparent(&format!("01{}-extra", &ok[2..])).is_some(),
            "future version may extend"
        );
        for bad in [
            "",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(parse_traceparent(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn ids_are_hex_and_distinct() {
        let (a, b) = (new_trace_id(), new_trace_id());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert_eq!(new_span_id().len(), 16);
        assert!(parse_traceparent(&format!("00-{a}-{}-01", new_span_id())).is_some());
    }
}
