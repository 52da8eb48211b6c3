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

/// The response headers the wasm surface reads for hints (src/wasm/response.rs).
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

/// The set of hints seen on one response.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpstreamHints(u32);

fn bit(hint: &str) -> u32 {
    ALL.iter().position(|h| *h == hint).map_or(0, |i| 1 << i)
}

impl UpstreamHints {
    /// A response header `name` (lower-case, one of `HINT_HEADERS`) with `value`.
    pub fn note(&mut self, name: &str, value: &str) {
        let v = value.trim();
        self.0 |= match name {
            "content-encoding" => {
                // The last coding applied is the one the stream went through last; a list
                // ("gzip, br") is rare and named by its last member.
                let last = v.rsplit(',').next().unwrap_or("").trim();
                match () {
                    _ if last.is_empty() || last.eq_ignore_ascii_case("identity") => 0,
                    _ if last.eq_ignore_ascii_case("gzip") || last.eq_ignore_ascii_case("x-gzip") => bit("content-encoding: gzip"),
                    _ if last.eq_ignore_ascii_case("br") => bit("content-encoding: br"),
                    _ if last.eq_ignore_ascii_case("deflate") => bit("content-encoding: deflate"),
                    _ if last.eq_ignore_ascii_case("zstd") => bit("content-encoding: zstd"),
                    _ => bit("content-encoding: other"),
                }
            }
            // nginx reads "yes"/"no" only (ngx_http_upstream_process_buffering); anything else
            // is no instruction at all.
            "x-accel-buffering" if v.eq_ignore_ascii_case("no") => bit("x-accel-buffering: no"),
            "x-accel-buffering" if v.eq_ignore_ascii_case("yes") => bit("x-accel-buffering: yes"),
            "x-accel-buffering" => 0,
            _ if HINT_HEADERS[2..].contains(&name) => bit(name),
            _ => 0,
        };
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
        assert_eq!(hints(&[("content-encoding", " BR ")]), ["content-encoding: br"]);
        assert_eq!(hints(&[("content-encoding", "x-gzip")]), ["content-encoding: gzip"]);
        assert_eq!(hints(&[("content-encoding", "deflate")]), ["content-encoding: deflate"]);
        assert_eq!(hints(&[("content-encoding", "zstd")]), ["content-encoding: zstd"]);
        assert_eq!(hints(&[("content-encoding", "gzip, br")]), ["content-encoding: br"]);
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
    fn every_hint_is_distinct_and_fits_the_bits() {
        assert!(ALL.len() <= 32, "one bit each in a u32");
        for (i, h) in ALL.iter().enumerate() {
            assert!(!ALL[i + 1..].contains(h), "{h}");
        }
        assert!(UpstreamHints::default().is_empty());
    }
}
