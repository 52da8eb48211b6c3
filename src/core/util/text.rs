//! The one string bound: every string the core keeps from outside (header values, names,
//! descriptions, script URLs) is cut with `truncate`, so no input can grow a record.

/// `s` cut to at most `max` bytes, backing off to a char boundary. Byte scanning and `get`
/// instead of slicing: no panic path (a str-slicing panic would keep `core::fmt` in the wasm).
pub fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_char_boundaries() {
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("abcd", 3), "abc");
        assert_eq!(truncate("aé", 2), "a", "é is 2 bytes: not cut in half");
        assert_eq!(truncate("🚀🚀", 7), "🚀");
        assert_eq!(truncate("🚀", 3), "");
        assert_eq!(truncate("", 0), "");
    }
}
