//! `Server-Timing` response header parser (W3C Server Timing, "The Server-Timing Header Field").
//! The entries are the server's stages (`queue`, `prefill`, …), which split the record's `ttft`
//! into server time and the rest (`ttftSplit`); `trace;desc=…` carries the server's trace.
//!
//! Grammar (Server Timing §3, with RFC 9110 `#`, `OWS`, `token`, `quoted-string`):
//! ```text
//! Server-Timing             = #server-timing-metric
//! server-timing-metric      = metric-name *( OWS ";" OWS server-timing-param )
//! metric-name               = token
//! server-timing-param       = server-timing-param-name OWS "=" OWS server-timing-param-value
//! server-timing-param-name  = token
//! server-timing-param-value = token / quoted-string
//! ```
//! Error recovery follows the spec's "if an incomplete or invalid server-timing-param is found,
//! the user agent SHOULD keep processing the header — either moving on to the next
//! server-timing-param or server-timing-metric" and the web-platform-tests
//! (`server-timing/server_timing_header-parsing`), which pin down the details:
//! * a param without `=` or with an empty/non-token value has the empty value (`dur` → 0,
//!   `desc` → "");
//! * characters after a param value up to the next `;`/`,` are ignored (`desc=d1 d2` → "d1");
//! * an unterminated quoted string is the empty value;
//! * characters after a metric name that are not `;`/`,` invalidate that metric's params (the
//!   metric is kept with its name only: `metric==""foo;dur=1` → `metric`, no dur).
//!   Deliberate deviation: parsing then resumes after the next comma outside quotes, so
//!   `m1==""x,m2` yields `m1` and `m2` (the WPT expectation, taken from Chromium, drops `m2`; the
//!   spec text above asks to move on to the next metric, and a RUM tool should not lose a good
//!   metric an intermediary appended after a bad one);
//! * a repeated param: the first occurrence wins "even if the server-timing-param is incomplete
//!   or invalid" (spec), e.g. `dur=foo;dur=5` → 0;
//! * param names are matched ASCII case-insensitively (`DuR`), metric names and values are kept
//!   as written; duplicate metric names are all kept (spec: "MUST process and expose all").
//!
//! Several `Server-Timing` headers arrive joined with ", " by fetch, which is the same list.
//!
//! Bounds, so a hostile header cannot blow up a record: at most `MAX_ENTRIES` entries in `out`,
//! names and descriptions truncated to `MAX_TEXT` bytes on a char boundary. Work is linear in
//! the header length.

use alloc::{string::String, vec::Vec};
use crate::core::util::decimal::parse_decimal;
use crate::core::util::text::truncate;
/// Upper bound on `out.len()` after `parse_server_timing`.
pub const MAX_ENTRIES: usize = 32;
/// Names and descriptions are truncated to this many bytes (on a UTF-8 char boundary).
pub const MAX_TEXT: usize = 128;

/// One `Server-Timing` metric.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerTimingEntry {
    pub name: String,
    /// `Some` when a `dur` param was present: its value in ms, or 0 when the value is empty or
    /// not a finite decimal number (spec: "value 0 if omitted or not representable as a
    /// double"). `None` when there was no `dur` param at all, so a record can tell "absent" from
    /// "0" (the browser's `PerformanceServerTiming.duration` reports 0 for both). Negative
    /// numbers are kept as sent.
    pub dur: Option<f64>,
    /// `Some` when a `desc` param was present (possibly empty), `None` otherwise.
    pub desc: Option<String>,
}

impl ServerTimingEntry {
    /// An entry the browser parsed already (a Resource Timing entry's `PerformanceServerTiming`:
    /// `name`, `duration`, `description`), bounded like a parsed one — no round trip through the
    /// header grammar. The browser reports an absent `dur` as 0 and an absent `desc` as "":
    /// both read as absent here, as a bare `name` in the header would.
    pub fn parsed_by_browser(name: &str, duration: f64, description: &str) -> ServerTimingEntry {
        ServerTimingEntry {
            name: bounded(name),
            dur: (duration != 0.0).then_some(duration),
            desc: (!description.is_empty()).then(|| bounded(description)),
        }
    }
}

/// Parses one `Server-Timing` header value (or several joined with ", "), appending entries to
/// `out` until `out` holds `MAX_ENTRIES`. Never panics; malformed parts are skipped as described
/// in the module docs.
pub fn parse_server_timing(header: &str, out: &mut Vec<ServerTimingEntry>) {
    let b = header.as_bytes();
    let mut i = 0;
    loop {
        if out.len() >= MAX_ENTRIES {
            return;
        }
        // OWS and empty list elements ("a, ,b": RFC 9110 §5.6.1 says recipients accept them).
        while i < b.len() && matches!(b[i], b' ' | b'\t' | b',') {
            i += 1;
        }
        if i >= b.len() {
            return;
        }
        let start = i;
        i = skip_token(b, i);
        if i == start {
            // Not a metric name: skip this list element.
            i = skip_junk(b, i, false);
            continue;
        }
        let mut entry = ServerTimingEntry {
            name: bounded(sub(header, start, i)),
            dur: None,
            desc: None,
        };
        let (mut seen_dur, mut seen_desc) = (false, false);
        i = skip_ows(b, i);
        while i < b.len() {
            match b[i] {
                b',' => break,
                b';' => {
                    i = parse_param(header, i + 1, &mut entry, &mut seen_dur, &mut seen_desc);
                }
                _ => {
                    // Garbage right after the name: the metric keeps its name only.
                    i = skip_junk(b, i, false);
                    break;
                }
            }
        }
        out.push(entry);
    }
}

/// Parses one param starting just after its `;`; returns the index of the following `;`/`,`
/// (not consumed) or the end.
fn parse_param(
    header: &str,
    mut i: usize,
    entry: &mut ServerTimingEntry,
    seen_dur: &mut bool,
    seen_desc: &mut bool,
) -> usize {
    let b = header.as_bytes();
    i = skip_ows(b, i);
    let name_start = i;
    i = skip_token(b, i);
    if i == name_start {
        return skip_junk(b, i, true);
    }
    let pname = b.get(name_start..i).unwrap_or(&[]);
    let is_dur = pname.eq_ignore_ascii_case(b"dur");
    let is_desc = pname.eq_ignore_ascii_case(b"desc");
    i = skip_ows(b, i);
    // The value: (raw text, is it a quoted-string body that still needs unescaping).
    let mut value: (&str, bool) = ("", false);
    if i < b.len() && b[i] == b'=' {
        i = skip_ows(b, i + 1);
        if i < b.len() && b[i] == b'"' {
            let (end, body) = scan_quoted(b, i);
            if let Some((s, e)) = body {
                value = (sub(header, s, e), true);
            }
            i = end;
        } else {
            let s = i;
            i = skip_token(b, i);
            value = (sub(header, s, i), false);
        }
    }
    if is_dur && !*seen_dur {
        *seen_dur = true;
        let d = if value.1 {
            parse_decimal(unescape(value.0).as_bytes())
        } else {
            parse_decimal(value.0.as_bytes())
        };
        entry.dur = Some(d.unwrap_or(0.0));
    } else if is_desc && !*seen_desc {
        *seen_desc = true;
        entry.desc =
            Some(if value.1 { bounded(&unescape(value.0)) } else { bounded(value.0) });
    }
    skip_junk(b, i, true)
}

/// RFC 9110 §5.6.2 tchar.
#[inline]
fn is_tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'!' | b'#'
                | b'$'
                | b'%'
                | b'&'
                | b'\''
                | b'*'
                | b'+'
                | b'-'
                | b'.'
                | b'^'
                | b'_'
                | b'`'
                | b'|'
                | b'~'
        )
}

fn skip_token(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_tchar(b[i]) {
        i += 1;
    }
    i
}

fn skip_ows(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t') {
        i += 1;
    }
    i
}

/// Skips to the next `,` (and, with `stop_at_semicolon`, `;`) outside a quoted string; returns
/// its index (not consumed) or the end. Quote-aware because a comma inside quotes does not end a
/// list element (RFC 9110 §5.6.1, fetch "get, decode, and split").
fn skip_junk(b: &[u8], mut i: usize, stop_at_semicolon: bool) -> usize {
    while i < b.len() {
        match b[i] {
            b',' => return i,
            b';' if stop_at_semicolon => return i,
            b'"' => i = scan_quoted(b, i).0,
            _ => i += 1,
        }
    }
    i
}

/// Scans a quoted-string whose opening `"` is at `i`. Returns the index after it and, when it
/// is terminated, the byte range of its body (escapes still in place). An unterminated string
/// runs to the end and has no body. Positions are always at ASCII bytes, so slicing the `&str`
/// there is on char boundaries (UTF-8 continuation bytes are never `"` or `\`).
fn scan_quoted(b: &[u8], i: usize) -> (usize, Option<(usize, usize)>) {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2, // quoted-pair
            b'"' => return (j + 1, Some((i + 1, j))),
            _ => j += 1,
        }
    }
    (b.len(), None)
}

/// Removes quoted-pair backslashes from a quoted-string body.
fn unescape(body: &str) -> String {
    let mut s = String::with_capacity(body.len());
    let mut escaped = false;
    for c in body.chars() {
        if c == '\\' && !escaped {
            escaped = true;
            continue;
        }
        escaped = false;
        s.push(c);
    }
    s
}

/// A name or description as kept: at most `MAX_TEXT` bytes.
fn bounded(s: &str) -> String {
    String::from(truncate(s, MAX_TEXT))
}

/// `&s[a..b]`, or "" if that is not a valid char range. The positions used here are always at
/// ASCII bytes, so the fallback never triggers; `get` instead of indexing keeps the panic path
/// (and the `core::fmt` code its message needs) out of the wasm.
#[inline]
fn sub(s: &str, a: usize, b: usize) -> &str {
    s.get(a..b).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (name, dur, desc) with WPT's view: dur/desc as Option so absence is visible.
    type E<'a> = (&'a str, Option<f64>, Option<&'a str>);

    fn parse(h: &str) -> Vec<ServerTimingEntry> {
        let mut v = Vec::new();
        parse_server_timing(h, &mut v);
        v
    }

    fn check(h: &str, expect: &[E]) {
        let got = parse(h);
        let want: Vec<ServerTimingEntry> = expect
            .iter()
            .map(|&(n, d, s)| ServerTimingEntry {
                name: n.to_string(),
                dur: d,
                desc: s.map(str::to_string),
            })
            .collect();
        assert_eq!(got, want, "header {h:?}");
    }

    #[test]
    fn spec_example() {
        // Server Timing §"Examples", the two headers and the trailer joined as fetch does.
        check(
            "miss, db;dur=53, app;dur=47.2, customView, dc;desc=atl, \
             cache;desc=\"Cache Read\";dur=23.2, total;dur=123.4",
            &[
                ("miss", None, None),
                ("db", Some(53.0), None),
                ("app", Some(47.2), None),
                ("customView", None, None),
                ("dc", None, Some("atl")),
                ("cache", Some(23.2), Some("Cache Read")),
                ("total", Some(123.4), None),
            ],
        );
    }

    // The web-platform-tests cases (server-timing/server_timing_header-parsing, generated by
    // cvazac/generate-server-timing-tests). WPT compares `duration` with 0 for absent dur; here
    // absent stays None and "present but empty/invalid" is Some(0.0).
    #[test]
    fn wpt_basics() {
        check("", &[]);
        check("metric", &[("metric", None, None)]);
        check("metric;dur=123.4", &[("metric", Some(123.4), None)]);
        check("metric;dur=\"123.4\"", &[("metric", Some(123.4), None)]);
        check("metric;desc=description", &[("metric", None, Some("description"))]);
        check("metric;desc=\"description\"", &[("metric", None, Some("description"))]);
        check("metric;dur=123.4;desc=description", &[("metric", Some(123.4), Some("description"))]);
        check("metric;desc=description;dur=123.4", &[("metric", Some(123.4), Some("description"))]);
        check("aB3!#$%&'*+-.^_`|~", &[("aB3!#$%&'*+-.^_`|~", None, None)]);
        check(
            "metric;desc=\"descr;,=iption\";dur=123.4",
            &[("metric", Some(123.4), Some("descr;,=iption"))],
        );
    }

    #[test]
    fn wpt_whitespace() {
        check("metric ; ", &[("metric", None, None)]);
        check("metric , ", &[("metric", None, None)]);
        check(
            "metric ; dur = 123.4 ; desc = description",
            &[("metric", Some(123.4), Some("description"))],
        );
        check(
            "metric ; desc = description ; dur = 123.4",
            &[("metric", Some(123.4), Some("description"))],
        );
        check("metric;desc = \"description\"", &[("metric", None, Some("description"))]);
        check("metric\t;\t", &[("metric", None, None)]);
        check("metric\t,\t", &[("metric", None, None)]);
        check(
            "metric\t;\tdur\t=\t123.4\t;\tdesc\t=\tdescription",
            &[("metric", Some(123.4), Some("description"))],
        );
        check(
            "metric;\tdesc=\ttabs-should-get-trimmed\t;dur=\t42\t",
            &[("metric", Some(42.0), Some("tabs-should-get-trimmed"))],
        );
    }

    #[test]
    fn wpt_multiple_entries() {
        check(
            "metric1;dur=12.3;desc=description1,metric2;dur=45.6;desc=description2,\
             metric3;dur=78.9;desc=description3",
            &[
                ("metric1", Some(12.3), Some("description1")),
                ("metric2", Some(45.6), Some("description2")),
                ("metric3", Some(78.9), Some("description3")),
            ],
        );
        check(
            "metric1,metric2 ,metric3, metric4 , metric5",
            &[
                ("metric1", None, None),
                ("metric2", None, None),
                ("metric3", None, None),
                ("metric4", None, None),
                ("metric5", None, None),
            ],
        );
        // Duplicate names are all kept.
        check(
            "metric;dur=12.3;desc=description1,metric;dur=45.6;desc=description2",
            &[
                ("metric", Some(12.3), Some("description1")),
                ("metric", Some(45.6), Some("description2")),
            ],
        );
    }

    #[test]
    fn wpt_quoted_strings() {
        check("metric;desc=\"\t description \t\"", &[("metric", None, Some("\t description \t"))]);
        check("metric;desc=\"descr\\\"iption\"", &[("metric", None, Some("descr\"iption"))]);
        // (raw header text, expected desc) — the WPT "quoted-strings - others" table.
        let table: &[(&str, &str)] = &[
            (r#"\"#, ""),
            (r#"""#, ""),
            (r#"\\"#, ""),
            (r#"\""#, ""),
            (r#""\"#, ""),
            (r#""""#, ""),
            (r#"\\\"#, ""),
            (r#"\\""#, ""),
            (r#"\"\"#, ""),
            (r#"\"""#, ""),
            (r#""\\"#, ""),
            (r#""\""#, ""),
            (r#"""\"#, ""),
            (r#"""""#, ""),
            (r#"\\\\"#, ""),
            (r#"\\\""#, ""),
            (r#"\\"\"#, ""),
            (r#"\\"""#, ""),
            (r#"\"\\"#, ""),
            (r#"\"\""#, ""),
            (r#"\""\"#, ""),
            (r#"\""""#, ""),
            (r#""\\\"#, ""),
            (r#""\\""#, "\\"),
            (r#""\"\"#, ""),
            (r#""\"""#, "\""),
            (r#"""\\"#, ""),
            (r#"""\""#, ""),
            (r#""""\"#, ""),
            (r#"""""""#, ""),
        ];
        for (raw, want) in table {
            check(&format!("metric;desc={raw}"), &[("metric", None, Some(want))]);
        }
    }

    #[test]
    fn wpt_params() {
        check("metric;DuR=123.4;DeSc=description", &[("metric", Some(123.4), Some("description"))]);
        check("MeTrIc;desc=DeScRiPtIoN", &[("MeTrIc", None, Some("DeScRiPtIoN"))]);
        check("metric;dur=foo", &[("metric", Some(0.0), None)]);
        check("metric;dur=\"foo\"", &[("metric", Some(0.0), None)]);
        check(
            "metric1;foo=bar;desc=description;foo=bar;dur=123.4;foo=bar,metric2",
            &[("metric1", Some(123.4), Some("description")), ("metric2", None, None)],
        );
        // Duplicate params: the first wins, even when invalid.
        check("metric;dur=123.4;dur=567.8", &[("metric", Some(123.4), None)]);
        check("metric;dur=foo;dur=567.8", &[("metric", Some(0.0), None)]);
        check(
            "metric;desc=description1;desc=description2",
            &[("metric", None, Some("description1"))],
        );
        // Incomplete params.
        check(
            "metric;dur;dur=123.4;desc=description",
            &[("metric", Some(0.0), Some("description"))],
        );
        check(
            "metric;dur=;dur=123.4;desc=description",
            &[("metric", Some(0.0), Some("description"))],
        );
        check("metric;desc;desc=description;dur=123.4", &[("metric", Some(123.4), Some(""))]);
        check("metric;desc=;desc=description;dur=123.4", &[("metric", Some(123.4), Some(""))]);
    }

    #[test]
    fn wpt_extraneous_characters() {
        check("metric;desc=d1 d2;dur=123.4", &[("metric", Some(123.4), Some("d1"))]);
        check(
            "metric1;desc=d1 d2,metric2",
            &[("metric1", None, Some("d1")), ("metric2", None, None)],
        );
        check("metric;desc=\"d1\" d2;dur=123.4", &[("metric", Some(123.4), Some("d1"))]);
        check(
            "metric1;desc=\"d1\" d2,metric2",
            &[("metric1", None, Some("d1")), ("metric2", None, None)],
        );
        check("metric==   \"\"foo;dur=123.4", &[("metric", None, None)]);
        // WPT expects only metric1 here; we resume at the next comma (documented deviation).
        check("metric1==   \"\"foo,metric2", &[("metric1", None, None), ("metric2", None, None)]);
        check("metric;dur foo=12", &[("metric", Some(0.0), None)]);
        check("metric;foo dur=12", &[("metric", None, None)]);
    }

    #[test]
    fn wpt_nonsense_yields_nothing() {
        for h in [" ", "=", "[", "]", ";", ",", "=;", ";=", "=,", ",=", ";,", ",;", "=;,", "{", "}"]
        {
            check(h, &[]);
        }
    }

    #[test]
    fn recovery_and_quotes() {
        // A comma inside quotes in junk does not end the element.
        check("a=\"x,y\";dur=1, b;dur=2", &[("a", None, None), ("b", Some(2.0), None)]);
        // An unterminated quote swallows the rest.
        check("a;desc=\"oops, b;dur=2", &[("a", None, Some(""))]);
        // Bad metric names are skipped, good neighbours kept.
        check("=x;dur=1, ok;dur=3", &[("ok", Some(3.0), None)]);
        check(",,, a ,, b,", &[("a", None, None), ("b", None, None)]);
        // Unknown params with quoted values containing delimiters.
        check("a;x=\"1;2,3\";dur=4", &[("a", Some(4.0), None)]);
        // Non-ASCII inside a quoted desc is kept; outside a token it is junk.
        check("a;desc=\"żółw 🐢\"", &[("a", None, Some("żółw 🐢"))]);
        check("a;desc=żółw;dur=1", &[("a", Some(1.0), Some(""))]);
        check("café;dur=1", &[("caf", None, None)]);
        // The trace context form (`trace;desc=<traceparent>`).
        check(
            "trace;desc=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            &[("trace", None, Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))],
        );
        check("a;dur=-1.5", &[("a", Some(-1.5), None)]);
        check("a;dur=1e400", &[("a", Some(0.0), None)]);
    }

    #[test]
    fn bounds() {
        let mut h = String::new();
        for i in 0..100 {
            h.push_str(&format!("m{i};dur={i},"));
        }
        let got = parse(&h);
        assert_eq!(got.len(), MAX_ENTRIES);
        assert_eq!(got[31].name, "m31");
        // The bound applies to `out`, across calls (one call per header is fine).
        let mut out = got;
        parse_server_timing("x", &mut out);
        assert_eq!(out.len(), MAX_ENTRIES);

        let long_name = "n".repeat(10_000);
        let got = parse(&format!("{long_name};desc={long_name}"));
        assert_eq!(got[0].name.len(), MAX_TEXT);
        assert_eq!(got[0].desc.as_deref().unwrap().len(), MAX_TEXT);
        // Truncation of a quoted desc lands on a char boundary (🐢 is 4 bytes).
        let turtles = "🐢".repeat(100);
        let got = parse(&format!("a;desc=\"x{turtles}\""));
        let d = got[0].desc.as_deref().unwrap();
        assert_eq!(d.len(), 125);
        assert!(d.starts_with("x🐢"));
    }

    #[test]
    fn garbage_never_panics() {
        // Deterministic fuzz over a delimiter-heavy alphabet (plus multi-byte chars).
        let alphabet = [
            'a', 'd', 'u', 'r', 'e', 's', 'c', '=', ';', ',', '"', '\\', ' ', '\t', '1', '.', '-',
            'é', '🐢', '\u{0}', 'E', '+',
        ];
        let mut x: u64 = 0x1234_5678_9abc_def1;
        for _ in 0..20_000 {
            let mut s = String::new();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 40) as usize;
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.push(alphabet[(x % alphabet.len() as u64) as usize]);
            }
            let got = parse(&s);
            assert!(got.len() <= MAX_ENTRIES);
            for e in &got {
                assert!(!e.name.is_empty() && e.name.len() <= MAX_TEXT);
                assert!(e.dur.is_none_or(f64::is_finite));
            }
        }
    }
}
