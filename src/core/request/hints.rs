//! `record.upstreamHints`: the response facts that explain text arriving in bursts, limited to
//! those a team can act on, each reported as a fixed string — header names, and for two
//! headers their (non-identifying) value from a closed set. Never a header's free text: a
//! `via` or `cf-ray` value names hosts and data centres, so only its presence is kept.
//!
//! * `content-encoding: gzip|br|deflate|zstd|other` — the stream is compressed; a compressor
//!   that is not flushed per event holds the text until its buffer fills or the answer ends
//!   (nginx `gzip_types text/event-stream`, compression middleware). Fix: do not compress
//!   event streams, or flush after every event.
//! * `x-accel-buffering: no|yes` — the server's request to nginx about buffering reached the
//!   page. nginx consumes this header (never passes it on), so seeing it means no nginx read
//!   it: the buffering (if any) is elsewhere.
//! * proxy and CDN markers, by presence: `via` (RFC 9110 §7.6.3, added by forward and
//!   reverse proxies), `cf-ray` (Cloudflare), `x-amz-cf-id` (CloudFront), `x-served-by`
//!   (Fastly, Varnish), `x-cache` (CDN caches), `x-vercel-id` (Vercel), `fly-request-id`
//!   (Fly.io), `x-azure-ref` (Azure Front Door) — something that may buffer is in the path.
//!
//! Cross-origin responses expose none of these unless the server lists them in
//! `Access-Control-Expose-Headers` (Fetch §3.2.3): absent there means "not visible".

/// The response headers the wasm surface reads for hints (core/request/headers.rs).
pub const HINT_HEADERS: [&str; 10] =
    ["content-encoding", "x-accel-buffering", "via", "cf-ray", "x-amz-cf-id", "x-served-by", "x-cache", "x-vercel-id", "fly-request-id", "x-azure-ref"];

/// Every hint the record can carry, in the order it lists them (bit i = `ALL[i]`).
pub const ALL: [&str; 15] = [
    "content-encoding: gzip",
    "content-encoding: br",
    "content-encoding: deflate",
    "content-encoding: zstd",
    "content-encoding: other",
    "x-accel-buffering: no",
    "x-accel-buffering: yes",
    "via",
    "cf-ray",
    "x-amz-cf-id",
    "x-served-by",
    "x-cache",
    "x-vercel-id",
    "fly-request-id",
    "x-azure-ref",
];

/// The set of hints seen on one response: bit i = `ALL[i]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpstreamHints(u32);

/// `ALL` indices: the encodings (the last one "other"), then X-Accel-Buffering's two values;
/// the proxy markers follow in `HINT_HEADERS` order (index = 5 + their place there).
const ENCODINGS: [(&[u8], u32); 5] = [(b"gzip", 0), (b"x-gzip", 0), (b"br", 1), (b"deflate", 2), (b"zstd", 3)];
const OTHER_ENCODING: u32 = 4;
const ACCEL_NO: u32 = 5;
const ACCEL_YES: u32 = 6;

impl UpstreamHints {
    /// A response header `name` (lower-case, one of `HINT_HEADERS`) with `value` as `Headers`
    /// gives it: without leading or trailing whitespace (Fetch §2.2, "normalize").
    pub fn note(&mut self, name: &str, value: &str) {
        let v = value.as_bytes();
        let hint = match name {
            "content-encoding" => {
                // The coding applied last ("gzip, br": br); identity is no coding at all.
                let mut last = v.iter().rposition(|&b| b == b',').map_or(v, |i| &v[i + 1..]);
                while let [b' ' | b'\t', rest @ ..] = last {
                    last = rest;
                }
                if last.is_empty() || last.eq_ignore_ascii_case(b"identity") {
                    return;
                }
                ENCODINGS.iter().find(|(c, _)| last.eq_ignore_ascii_case(c)).map_or(OTHER_ENCODING, |e| e.1)
            }
            // nginx reads "yes"/"no" only (ngx_http_upstream_process_buffering); anything else
            // is no instruction at all.
            "x-accel-buffering" if v.eq_ignore_ascii_case(b"no") => ACCEL_NO,
            "x-accel-buffering" if v.eq_ignore_ascii_case(b"yes") => ACCEL_YES,
            _ => match HINT_HEADERS.iter().position(|h| *h == name) {
                Some(i) if i >= 2 => 5 + i as u32,
                _ => return,
            },
        };
        self.0 |= 1 << hint;
    }

    /// The hints, in `ALL` order.
    pub fn iter(self) -> impl Iterator<Item = &'static str> {
        ALL.iter().enumerate().filter(move |(i, _)| self.0 & (1 << i) != 0).map(|(_, h)| *h)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn hints(headers: &[(&str, &str)]) -> Vec<&'static str> {
        let mut h = UpstreamHints::default();
        for (n, v) in headers {
            h.note(n, v);
        }
        h.iter().collect()
    }

    #[test]
    fn encodings_by_name_identity_is_none() {
        assert_eq!(hints(&[("content-encoding", "gzip")]), ["content-encoding: gzip"]);
        assert_eq!(hints(&[("content-encoding", "BR")]), ["content-encoding: br"]);
        assert_eq!(hints(&[("content-encoding", "x-gzip")]), ["content-encoding: gzip"]);
        assert_eq!(hints(&[("content-encoding", "deflate")]), ["content-encoding: deflate"]);
        assert_eq!(hints(&[("content-encoding", "zstd")]), ["content-encoding: zstd"]);
        assert_eq!(hints(&[("content-encoding", "gzip, br")]), ["content-encoding: br"]);
        assert_eq!(hints(&[("content-encoding", "br,\tgzip")]), ["content-encoding: gzip"]);
        assert_eq!(hints(&[("content-encoding", "compress")]), ["content-encoding: other"]);
        assert!(hints(&[("content-encoding", "identity")]).is_empty());
        assert!(hints(&[("content-encoding", "")]).is_empty());
    }

    #[test]
    fn accel_buffering_only_its_two_values() {
        assert_eq!(hints(&[("x-accel-buffering", "no")]), ["x-accel-buffering: no"]);
        assert_eq!(hints(&[("x-accel-buffering", "Yes")]), ["x-accel-buffering: yes"]);
        assert!(hints(&[("x-accel-buffering", "off")]).is_empty());
    }

    #[test]
    fn proxies_by_presence_never_their_values() {
        let h = hints(&[("via", "1.1 edge-fra-07.example.net"), ("cf-ray", "8a1b2c3d4e5f-FRA"), ("x-cache", "MISS from cache-ams"), ("x-request-id", "r")]);
        assert_eq!(h, ["via", "cf-ray", "x-cache"]);
        for name in &HINT_HEADERS[2..] {
            assert_eq!(hints(&[(name, "x")]), [*name], "{name}");
        }
        assert!(hints(&[("server", "nginx")]).is_empty());
    }

    #[test]
    fn the_index_tables_name_the_hints_they_mean() {
        for (coding, i) in ENCODINGS {
            let name = if coding == b"x-gzip" { "gzip" } else { core::str::from_utf8(coding).unwrap() };
            assert_eq!(ALL[i as usize], alloc::format!("content-encoding: {name}"));
        }
        assert_eq!(ALL[OTHER_ENCODING as usize], "content-encoding: other");
        assert_eq!((ALL[ACCEL_NO as usize], ALL[ACCEL_YES as usize]), ("x-accel-buffering: no", "x-accel-buffering: yes"));
        assert_eq!(&ALL[7..], &HINT_HEADERS[2..]);
    }

    #[test]
    fn every_hint_is_distinct_and_fits_the_bits() {
        assert!(ALL.len() <= 32, "one bit each in a u32");
        for (i, h) in ALL.iter().enumerate() {
            assert!(!ALL[i + 1..].contains(h), "{h}");
        }
        assert!(UpstreamHints::default().is_empty());
    }
}
