//! Names that become keys: routes, models, pages, Server-Timing stage names, formats, methods.
//!
//! They come from beacons (anyone can send one), are filtered and grouped on, and end up in
//! the dashboard and in logs. The dashboard renders every value as text whatever it is; this
//! is the second wall: at ingest, every byte outside a small safe set is percent-encoded
//! (`<img>` → `%3Cimg%3E`), the way a browser writes a URL path. Lossless for what the SDK
//! sends (URL paths are already encoded; Server-Timing names are tokens), and no quote, angle
//! bracket, ampersand, backslash, space or control character survives.

/// Letters, digits and `-._~/:@+,;=%`: enough for URL paths (RFC 3986 pchar minus `!$&'()*`),
/// model ids (`meta-llama/Llama-3-70B`, `gpt-4o@2024-08-06`) and stage names.
fn safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~/:@+,;=%".contains(&b)
}

/// `s` with unsafe bytes percent-encoded, cut to at most `max` bytes (never inside an escape).
pub fn safe_key(s: &str, max: usize) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(s.len().min(max));
    for &b in s.as_bytes() {
        let need = if safe(b) { 1 } else { 3 };
        if out.len() + need > max {
            break;
        }
        if safe(b) {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_controls_are_encoded_paths_and_ids_are_kept() {
        assert_eq!(
            safe_key("/v1/chat/completions", 512),
            "/v1/chat/completions"
        );
        assert_eq!(
            safe_key("meta-llama/Llama-3-70B@v1.5", 512),
            "meta-llama/Llama-3-70B@v1.5"
        );
        assert_eq!(
            safe_key("<img src=x onerror=alert(1)>", 512),
            "%3Cimg%20src=x%20onerror=alert%281%29%3E"
        );
        assert_eq!(safe_key("a\"b'c&d\\e`f\n", 512), "a%22b%27c%26d%5Ce%60f%0A");
        assert_eq!(safe_key("héllo", 512), "h%C3%A9llo");
        // Cut at the limit, never inside an escape.
        assert_eq!(safe_key("ab<cd", 4), "ab");
        assert_eq!(safe_key("ab<cd", 5), "ab%3C");
        // Every byte value: the output holds only safe bytes.
        let all: String = (1u8..128).map(|b| b as char).collect::<String>() + "é€😀";
        assert!(safe_key(&all, 10_000).bytes().all(safe));
    }
}
