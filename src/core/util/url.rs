//! The one URL splitter. URLs reach the core from the browser's URL parser (already absolute
//! and normalised), so cutting at two boundaries is all the core needs — a full URL parser
//! would cost the shipped wasm far more than its job is worth.

/// `url` cut at its two boundaries: `scheme://authority`, the path, and what follows (the
/// `?query` and `#fragment`). The origin is "" when `url` has no `scheme://` before its
/// query; the three parts always concatenate back to `url`.
pub fn split(url: &str) -> (&str, &str, &str) {
    // Byte scanning and `get`: no panic path (a str-slicing panic alone would keep
    // core::fmt's Debug printing and Unicode tables in the wasm).
    let b = url.as_bytes();
    let query = b.iter().position(|&c| c == b'?' || c == b'#').unwrap_or(b.len());
    let head = b.get(..query).unwrap_or(&[]);
    let origin = match head.windows(3).position(|w| w == b"://") {
        Some(scheme_end) => {
            let start = scheme_end + 3;
            head.get(start..).and_then(|rest| rest.iter().position(|&c| c == b'/')).map_or(query, |p| start + p)
        }
        None => 0,
    };
    let part = |a: usize, z: usize| url.get(a..z).unwrap_or("");
    (part(0, origin), part(origin, query), part(query, b.len()))
}

/// `scheme://authority` of an absolute URL, or "" when there is none.
pub fn origin_of(url: &str) -> &str {
    split(url).0
}

/// `url` without query and fragment.
pub fn strip_query(url: &str) -> &str {
    let (origin, path, _) = split(url);
    url.get(..origin.len() + path.len()).unwrap_or(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_and_queries() {
        assert_eq!(origin_of("https://a.b:8080/x?y#z"), "https://a.b:8080");
        assert_eq!(origin_of("https://a.b?y"), "https://a.b");
        assert_eq!(strip_query("https://a.b/x?y=1#z"), "https://a.b/x");
        assert_eq!(strip_query("https://a.b/x#z?q"), "https://a.b/x");
    }

    #[test]
    fn parts_concatenate_back() {
        for url in ["https://a.b/x/y?q=1#f", "https://a.b", "http://a.b#f", "/rel?x=http://c", "", "data:text/plain,hi", "IMG[src=https://x/?t=1].onload"] {
            let (o, p, q) = split(url);
            assert_eq!([o, p, q].concat(), url);
        }
        assert_eq!(split("https://a.b/x/y?q=1#f"), ("https://a.b", "/x/y", "?q=1#f"));
        // A "://" inside the query is not a scheme.
        assert_eq!(split("/rel?x=http://c"), ("", "/rel", "?x=http://c"));
        assert_eq!(strip_query("IMG[src=https://x/?t=1].onload"), "IMG[src=https://x/");
    }
}
