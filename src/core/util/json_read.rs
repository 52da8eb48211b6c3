//! A minimal JSON reader (RFC 8259) for pulling a few fields out of one event.
//!
//! Nothing is materialised: a [`Json`] is a borrowed slice of the input covering one value;
//! `get` / `items` walk it lazily, string contents are compared and counted on their escaped
//! form. [`parse`] validates the whole document once (grammar, escapes, nesting ≤
//! [`MAX_DEPTH`]), so later walks over the same text cannot fail halfway and never recurse
//! deeper than the cap. Garbage, truncated or too-deep input gives `None`, never a panic.
//!
//! Why not serde_json: tens of KB in the wasm build for a job that needs a few borrowed
//! fields per event (and the configuration once).

/// Deepest object/array nesting accepted. Real events nest ≤ 6; the cap bounds recursion.
pub const MAX_DEPTH: u32 = 32;

/// One JSON value: its exact text in the document (strings include their quotes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Json<'a> {
    text: &'a str,
}

/// Parses a whole document: one value, optionally surrounded by whitespace.
pub fn parse(text: &str) -> Option<Json<'_>> {
    let b = text.as_bytes();
    let start = ws(b, 0);
    let end = value_end(b, start, 0)?;
    if ws(b, end) != b.len() {
        return None;
    }
    Some(Json { text: text.get(start..end)? })
}

/// Index of the first non-whitespace byte at or after `i` (RFC 8259 §2 `ws`).
fn ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// End (exclusive) of the value starting at `i`, validating it.
/// `parse` and `fields` in one pass, for the hot path (one walk over each event): the
/// members `keys` of a document that must be one valid JSON object; `None` when it is not.
pub fn parse_fields<'a, const N: usize>(text: &'a str, keys: [&str; N]) -> Option<[Option<Json<'a>>; N]> {
    let b = text.as_bytes();
    let start = ws(b, 0);
    if b.get(start) != Some(&b'{') {
        return None;
    }
    let mut out = [None; N];
    let end = members(text, start, 0, &keys, &mut out)?;
    (ws(b, end) == b.len()).then_some(out)
}

/// Walks the object starting at `i` (its `{`), validating it, and fills `out[k]` with the
/// first member named `keys[k]`. Returns the index after the closing `}`.
fn members<'a>(text: &'a str, i: usize, depth: u32, keys: &[&str], out: &mut [Option<Json<'a>>]) -> Option<usize> {
    let b = text.as_bytes();
    let mut j = ws(b, i + 1);
    if b.get(j) == Some(&b'}') {
        return Some(j + 1);
    }
    loop {
        let kend = str_end(b, j)?;
        // Keys almost never carry escapes: compare the raw bytes, unescape only if needed.
        let k = Json { text: text.get(j..kend)? };
        let raw = k.str_raw()?;
        let plain = !raw.as_bytes().contains(&b'\\');
        j = ws(b, kend);
        if b.get(j) != Some(&b':') {
            return None;
        }
        let vstart = ws(b, j + 1);
        let vend = value_end(b, vstart, depth + 1)?;
        for (slot, key) in out.iter_mut().zip(keys) {
            if slot.is_none() && (if plain { raw == *key } else { k.str_eq(key) }) {
                *slot = Some(Json { text: text.get(vstart..vend)? });
            }
        }
        j = ws(b, vend);
        match *b.get(j)? {
            b',' => j = ws(b, j + 1),
            b'}' => return Some(j + 1),
            _ => return None,
        }
    }
}

fn value_end(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    match *b.get(i)? {
        b'"' => str_end(b, i),
        open @ (b'{' | b'[') => {
            if depth >= MAX_DEPTH {
                return None;
            }
            let close = if open == b'{' { b'}' } else { b']' };
            let mut j = ws(b, i + 1);
            if b.get(j) == Some(&close) {
                return Some(j + 1);
            }
            loop {
                if open == b'{' {
                    j = ws(b, str_end(b, j)?);
                    if b.get(j) != Some(&b':') {
                        return None;
                    }
                    j = ws(b, j + 1);
                }
                j = ws(b, value_end(b, j, depth + 1)?);
                match *b.get(j)? {
                    b',' => j = ws(b, j + 1),
                    c if c == close => return Some(j + 1),
                    _ => return None,
                }
            }
        }
        b't' => lit(b, i, b"true"),
        b'f' => lit(b, i, b"false"),
        b'n' => lit(b, i, b"null"),
        b'-' | b'0'..=b'9' => num_end(b, i),
        _ => None,
    }
}

fn lit(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    (b.get(i..)?.starts_with(word)).then_some(i + word.len())
}

fn digits(b: &[u8], mut i: usize) -> Option<usize> {
    let start = i;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    (i > start).then_some(i)
}

/// RFC 8259 §6: `-? int frac? exp?` (leading zeros tolerated).
fn num_end(b: &[u8], mut i: usize) -> Option<usize> {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    i = digits(b, i)?;
    if b.get(i) == Some(&b'.') {
        i = digits(b, i + 1)?;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        i = digits(b, i)?;
    }
    Some(i)
}

/// End (exclusive, after the closing quote) of the string starting at `i` (RFC 8259 §7).
fn str_end(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        match *b.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' => match *b.get(j + 1)? {
                b'u' => {
                    hex4(b, j + 2)?;
                    j += 6;
                }
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => j += 2,
                _ => return None,
            },
            0..=0x1F => return None, // unescaped control characters are not allowed
            _ => j += 1,
        }
    }
}

fn hex4(b: &[u8], i: usize) -> Option<u32> {
    let h = b.get(i..i + 4)?;
    h.iter().try_fold(0u32, |acc, &c| Some(acc * 16 + (c as char).to_digit(16)?))
}

impl<'a> Json<'a> {
    /// The value's JSON text.
    pub fn text(self) -> &'a str {
        self.text
    }

    fn first(self) -> u8 {
        self.text.as_bytes().first().copied().unwrap_or(0)
    }

    /// The member `key` of an object (the first one, if repeated); `None` for non-objects.
    /// Keys are compared after unescaping.
    pub fn get(self, key: &str) -> Option<Json<'a>> {
        if self.first() != b'{' {
            return None;
        }
        let b = self.text.as_bytes();
        let mut j = ws(b, 1);
        while b.get(j) == Some(&b'"') {
            let kend = str_end(b, j)?;
            let k = Json { text: self.text.get(j..kend)? };
            let vstart = ws(b, ws(b, kend) + 1); // skip ':' (validated by `parse`)
            let vend = value_end(b, vstart, 0)?;
            if k.str_eq(key) {
                return Some(Json { text: self.text.get(vstart..vend)? });
            }
            j = ws(b, vend);
            if b.get(j) != Some(&b',') {
                return None;
            }
            j = ws(b, j + 1);
        }
        None
    }

    /// Several members of an object in one pass (the first of each key; `None` where absent
    /// or for non-objects). Per-event classification needs 4–8 keys of the same object:
    /// one walk instead of one per `get` (measured: ~2.8 → ~1 µs for a 174-byte OpenAI
    /// chunk in Chromium).
    pub fn fields<const N: usize>(self, keys: [&str; N]) -> [Option<Json<'a>>; N] {
        let mut out = [None; N];
        if self.first() == b'{' {
            // Already validated by `parse`; depth is irrelevant for an in-bounds walk.
            let _ = members(self.text, 0, 0, &keys, &mut out);
        }
        out
    }

    /// Follows a path of object keys: `v.path(&["response", "usage", "output_tokens"])`.
    pub fn path(self, keys: &[&str]) -> Option<Json<'a>> {
        keys.iter().try_fold(self, |v, k| v.get(k))
    }

    /// The elements of an array (nothing for non-arrays).
    pub fn items(self) -> Items<'a> {
        let pos = if self.first() == b'[' { 1 } else { usize::MAX };
        Items { text: self.text, pos }
    }

    pub fn is_null(self) -> bool {
        self.text == "null"
    }

    pub fn as_bool(self) -> Option<bool> {
        match self.text {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    }

    /// A non-negative integer (saturating at `u32::MAX`); `None` for anything else,
    /// including fractions and exponents.
    pub fn as_u32(self) -> Option<u32> {
        let b = self.text.as_bytes();
        if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(b.iter().fold(0u32, |n, d| n.saturating_mul(10).saturating_add(u32::from(d - b'0'))))
    }

    /// A string's contents exactly as written (escapes not processed).
    pub fn str_raw(self) -> Option<&'a str> {
        if self.first() != b'"' {
            return None;
        }
        self.text.get(1..self.text.len().checked_sub(1)?)
    }

    /// The unescaped characters of a string (nothing for non-strings). No allocation.
    pub fn chars(self) -> Unescape<'a> {
        Unescape { s: self.str_raw().unwrap_or("") }
    }

    /// Number of Unicode scalar values in a string after unescaping (a `\uD83D\uDE00`
    /// surrogate pair is one; a lone surrogate counts one, as the U+FFFD it renders as).
    pub fn str_chars(self) -> Option<u32> {
        self.str_raw()?;
        Some(u32::try_from(self.chars().count()).unwrap_or(u32::MAX))
    }

    /// True when this is a string equal to `s` after unescaping.
    pub fn str_eq(self, s: &str) -> bool {
        match self.str_raw() {
            Some(raw) if !raw.contains('\\') => raw == s,
            Some(_) => self.chars().eq(s.chars()),
            None => false,
        }
    }
}

/// Iterator over array elements.
#[derive(Clone, Debug)]
pub struct Items<'a> {
    text: &'a str,
    /// Index of the next element, or `usize::MAX` when done.
    pos: usize,
}

impl<'a> Iterator for Items<'a> {
    type Item = Json<'a>;
    fn next(&mut self) -> Option<Json<'a>> {
        let b = self.text.as_bytes();
        let start = ws(b, self.pos);
        let end = match b.get(start) {
            Some(b']') | None => None,
            Some(_) => value_end(b, start, 0),
        };
        let Some(end) = end else {
            self.pos = usize::MAX;
            return None;
        };
        let next = ws(b, end);
        self.pos = if b.get(next) == Some(&b',') { next + 1 } else { usize::MAX };
        Some(Json { text: self.text.get(start..end)? })
    }
}

/// Decodes the escapes of a string's raw contents (RFC 8259 §7), one `char` at a time.
#[derive(Clone, Debug)]
pub struct Unescape<'a> {
    s: &'a str,
}

impl Iterator for Unescape<'_> {
    type Item = char;
    fn next(&mut self) -> Option<char> {
        let c = self.s.chars().next()?;
        if c != '\\' {
            self.s = self.s.get(c.len_utf8()..).unwrap_or("");
            return Some(c);
        }
        let b = self.s.as_bytes();
        let (ch, used) = match b.get(1) {
            Some(b'u') => {
                let hi = hex4(b, 2).unwrap_or(0xFFFD);
                let lo = if b.get(6..8) == Some(b"\\u") { hex4(b, 8) } else { None };
                match (hi, lo) {
                    (0xD800..=0xDBFF, Some(lo @ 0xDC00..=0xDFFF)) => {
                        (char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)), 12)
                    }
                    _ => (char::from_u32(hi), 6),
                }
            }
            Some(b'n') => (Some('\n'), 2),
            Some(b't') => (Some('\t'), 2),
            Some(b'r') => (Some('\r'), 2),
            Some(b'b') => (Some('\u{8}'), 2),
            Some(b'f') => (Some('\u{C}'), 2),
            Some(&e) => (Some(e as char), 2), // \" \\ \/
            None => (None, 1),
        };
        self.s = self.s.get(used..).unwrap_or("");
        Some(ch.unwrap_or('\u{FFFD}'))
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn fields_reads_several_members_in_one_pass() {
        let v = parse(r#"{"a":1,"b":{"x":[1,{"y":"}"}]},"c":"s\"","a":2}"#).unwrap();
        let [a, b, c, d] = v.fields(["a", "b", "c", "d"]);
        assert_eq!(a.map(Json::text), Some("1"), "first of a repeated key wins, like get");
        assert_eq!(b.map(Json::text), Some(r#"{"x":[1,{"y":"}"}]}"#));
        assert_eq!(c.and_then(Json::str_chars), Some(2));
        assert_eq!(d, None);
        for key in ["a", "b", "c", "d"] {
            assert_eq!(v.fields([key])[0], v.get(key), "{key}");
        }
        assert_eq!(parse("[1]").unwrap().fields(["a"]), [None]);
        let text = r#" {"a":1,"b":{"x":[1,{"y":"}"}]},"c":"s\"","a":2} "#;
        assert_eq!(parse_fields(text, ["a", "b", "c", "d"]), Some([a, b, c, d]));
        for bad in [r#"{"a":1"#, r#"{"a":1}x"#, r#"{"a" 1}"#, r#"{"a":1,}"#, "[1]", "", r#"{"a":[}"#] {
            assert_eq!(parse_fields(bad, ["a"]), None, "{bad}");
            assert_eq!(parse(bad).map(|v| v.fields(["a"])), if bad == "[1]" { Some([None]) } else { None });
        }
        assert_eq!(Json::default().fields(["a"]), [None]);
    }

    use super::*;

    #[test]
    fn navigates_paths() {
        let j = parse(
            r#" {"id":"x","choices":[{"index":0,"delta":{"content":"Hi","x":[1,{"y":null}]},"finish_reason":null},
              {"index":1,"delta":{"content":"yo"}}],"usage":{"completion_tokens":42},"n":-1.5e3} "#,
        )
        .unwrap();
        let ch: Vec<_> = j.get("choices").unwrap().items().collect();
        assert_eq!(ch.len(), 2);
        assert!(ch[0].path(&["delta", "content"]).unwrap().str_eq("Hi"));
        assert!(ch[0].get("finish_reason").unwrap().is_null());
        assert_eq!(ch[1].path(&["delta", "content"]).unwrap().str_chars(), Some(2));
        assert_eq!(j.path(&["usage", "completion_tokens"]).unwrap().as_u32(), Some(42));
        assert_eq!(j.get("n").unwrap().text(), "-1.5e3");
        assert_eq!(j.get("n").unwrap().as_u32(), None);
        assert_eq!(j.get("missing"), None);
        assert_eq!(j.get("id").unwrap().get("x"), None);
        assert_eq!(j.get("id").unwrap().items().count(), 0);
        assert_eq!(parse("[]").unwrap().items().count(), 0);
        assert_eq!(parse("[1, [2,3] ,{}]").unwrap().items().count(), 3);
        assert_eq!(parse("{}").unwrap().get("a"), None);
        assert_eq!(parse("99999999999").unwrap().as_u32(), Some(u32::MAX));
        assert_eq!(parse("true").unwrap().as_bool(), Some(true));
    }

    #[test]
    fn escapes_and_counting() {
        let j =
            parse(r#"{"a":"line\nnext \"q\" \\ \/ \u00e9 \ud83d\ude00 \u2764\ufe0f","k\u0065y":1,"lone":"\ud800x"}"#)
                .unwrap();
        let a = j.get("a").unwrap();
        let want = "line\nnext \"q\" \\ / é 😀 ❤\u{fe0f}";
        assert_eq!(a.chars().collect::<String>(), want);
        assert_eq!(a.str_chars(), Some(want.chars().count() as u32));
        assert!(a.str_eq(want));
        assert!(!a.str_eq("line"));
        assert_eq!(j.get("key").unwrap().as_u32(), Some(1), "escaped key matches");
        assert_eq!(j.get("lone").unwrap().str_chars(), Some(2));
        assert_eq!(j.get("lone").unwrap().chars().collect::<String>(), "\u{FFFD}x");
        assert_eq!(parse(r#""Héllo 😀""#).unwrap().str_chars(), Some(7));
        assert_eq!(parse("1").unwrap().str_chars(), None);
    }

    #[test]
    fn rejects_garbage_and_truncation() {
        let bad = [
            "",
            " ",
            "{",
            "{\"a\"",
            "{\"a\":",
            "{\"a\":1",
            "{\"a\":1,}",
            "[1,]",
            "[1 2]",
            "{a:1}",
            "\"abc",
            "\"\\x\"",
            "\"\\u12\"",
            "\"a\nb\"",
            "tru",
            "nul",
            "-",
            "1.",
            "1e",
            "01x",
            "{\"a\":1}}",
            "[}",
            "{]",
            "\"\\",
            "{\"a\" 1}",
            "[\"\\u00",
            "nan",
        ];
        for s in bad {
            assert!(parse(s).is_none(), "{s:?}");
        }
        let text = r#"{"choices":[{"delta":{"content":"Hello, world"}}],"usage":{"completion_tokens":5}}"#;
        for i in 0..text.len() {
            if let Some(t) = text.get(..i) {
                assert!(parse(t).is_none(), "prefix {i}");
            }
        }
    }

    #[test]
    fn depth_is_capped() {
        let ok = "[".repeat(MAX_DEPTH as usize) + &"]".repeat(MAX_DEPTH as usize);
        assert!(parse(&ok).is_some());
        let deep = "[".repeat(MAX_DEPTH as usize + 1) + &"]".repeat(MAX_DEPTH as usize + 1);
        assert!(parse(&deep).is_none());
        // A depth bomb: a million open brackets returns None without exhausting the stack.
        let bomb = "[".repeat(1_000_000);
        assert!(parse(&bomb).is_none());
        let bomb = "{\"a\":".repeat(200_000);
        assert!(parse(&bomb).is_none());
    }

    #[test]
    fn random_input_never_panics() {
        let mut x: u64 = 0x2545F4914F6CDD1D;
        let alphabet = "{}[]\":,\\u0dD8eE.-+ trfnalsx\u{e9}😀";
        let chars: Vec<char> = alphabet.chars().collect();
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 24) as usize;
            let s: String = (0..len).map(|i| chars[((x >> (i % 50)) as usize + i * 7) % chars.len()]).collect();
            if let Some(j) = parse(&s) {
                let _ = j.get("a").map(|v| v.str_chars());
                let _ = j.items().map(|v| v.chars().count()).sum::<usize>();
            }
        }
    }
}
