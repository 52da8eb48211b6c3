//! SDK configuration as the core sees it: already validated plain values (the JS facade owns
//! option parsing and warnings; numbers cross the wasm boundary as numbers, so the core needs
//! no float parser).

use alloc::{string::String, vec::Vec};
/// A per-metric budget: `metric` is a record key, or `group.stat` such as `itl.p95`.
#[derive(Clone, Debug, PartialEq)]
pub struct Budget {
    pub metric: String,
    pub limit: f64,
}

#[derive(Clone, Debug)]
pub struct Config {
    /// A gap longer than this between visible progress is a stall (DESIGN.md §1).
    pub stall_threshold_ms: f64,
    /// The page clock's step (performance.now() granularity: 5 µs to 1 ms by engine and
    /// isolation), measured by the facade at init. Every time read from it is within one step
    /// of the true time, so it adds to the paint brackets' error (`paintErrorMs`).
    pub clock_step_ms: f64,
    /// `location.origin` of the page, e.g. `https://chat.example.com`.
    pub page_origin: String,
    /// Cross-origin `traceparent` allowlist: origins (`https://api.example.com`) or URL
    /// prefixes (`https://api.example.com/v1/`).
    pub propagate: Vec<String>,
    pub budgets: Vec<Budget>,
    /// Strip `?query` and `#fragment` from recorded URLs (they often carry user data).
    pub strip_query: bool,
    /// The session's sampling decision; unsampled sessions propagate flags `00` and record
    /// nothing.
    pub sampled: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            stall_threshold_ms: 250.0,
            clock_step_ms: 0.0,
            page_origin: String::new(),
            propagate: Vec::new(),
            budgets: Vec::new(),
            strip_query: true,
            sampled: true,
        }
    }
}

impl Config {
    /// Whether a `traceparent` may be added to a request for `url` (absolute). Same origin
    /// always; other origins only when allow-listed, because a non-safelisted header makes
    /// the request CORS-preflighted (Fetch §4.8), which can break the app.
    pub fn may_propagate(&self, url: &str) -> bool {
        let origin = origin_of(url);
        if origin.is_empty() {
            return false;
        }
        if origin.eq_ignore_ascii_case(&self.page_origin) {
            return true;
        }
        self.propagate.iter().any(|entry| {
            let entry = entry.trim();
            let entry_origin = origin_of(entry);
            if entry_origin.is_empty() {
                return false;
            }
            // `get` instead of indexing: no panic path (keeps core::fmt out of the wasm).
            let entry_path = entry.get(entry_origin.len()..).unwrap_or("");
            let url_path = url.get(origin.len()..).unwrap_or("");
            // An origin matches by equality; a path prefix also compares the path.
            entry_origin.eq_ignore_ascii_case(origin) && (entry_path == "/" || url_path.starts_with(entry_path))
        })
    }
}

/// `scheme://authority` of an absolute URL, or "" when there is none. URLs come from the
/// browser's URL parser (already normalised), so this is a split, not a parser.
pub fn origin_of(url: &str) -> &str {
    // Byte scanning and `get`: no panic path (a str-slicing panic alone would keep core::fmt's
    // Debug printing and Unicode tables in the wasm).
    let b = url.as_bytes();
    let Some(scheme_end) = b.windows(3).position(|w| w == b"://") else { return "" };
    let start = scheme_end + 3;
    let rest = b.get(start..).unwrap_or(&[]);
    let end = rest.iter().position(|&c| c == b'/' || c == b'?' || c == b'#').map_or(b.len(), |p| start + p);
    url.get(..end).unwrap_or("")
}

/// `url` without query and fragment.
pub fn strip_query(url: &str) -> &str {
    match url.bytes().position(|c| c == b'?' || c == b'#') {
        Some(i) => url.get(..i).unwrap_or(url),
        None => url,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(allow: &[&str]) -> Config {
        Config {
            page_origin: "https://chat.example.com".into(),
            propagate: allow.iter().map(|s| s.to_string()).collect(),
            ..Config::default()
        }
    }

    #[test]
    fn same_origin_always_propagates() {
        let c = cfg(&[]);
        assert!(c.may_propagate("https://chat.example.com/v1/chat"));
        assert!(!c.may_propagate("https://api.example.com/v1/chat"));
        assert!(!c.may_propagate("http://chat.example.com/v1/chat"), "scheme is part of the origin");
        assert!(!c.may_propagate("https://chat.example.com:8443/x"), "port is part of the origin");
        assert!(!c.may_propagate("data:text/plain,hi"));
        assert!(!c.may_propagate(""));
    }

    #[test]
    fn allowlist_by_origin_is_exact() {
        let c = cfg(&["https://api.example.com"]);
        assert!(c.may_propagate("https://api.example.com/v1/chat"));
        assert!(c.may_propagate("https://api.example.com"));
        assert!(!c.may_propagate("https://api.example.com.evil.test/v1"));
        assert!(!c.may_propagate("https://api.example.community/"));
        let c = cfg(&["https://api.example.com/"]);
        assert!(c.may_propagate("https://api.example.com/v1/chat"));
    }

    #[test]
    fn allowlist_by_prefix() {
        let c = cfg(&["https://api.example.com/v1/"]);
        assert!(c.may_propagate("https://api.example.com/v1/chat"));
        assert!(!c.may_propagate("https://api.example.com/v2/chat"));
        assert!(!c.may_propagate("https://api.example.com.evil.test/v1/chat"));
    }

    #[test]
    fn origins_and_queries() {
        assert_eq!(origin_of("https://a.b:8080/x?y#z"), "https://a.b:8080");
        assert_eq!(origin_of("https://a.b?y"), "https://a.b");
        assert_eq!(strip_query("https://a.b/x?y=1#z"), "https://a.b/x");
        assert_eq!(strip_query("https://a.b/x#z?q"), "https://a.b/x");
    }
}
