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

use crate::core::util::swar::string_run;

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
    Some(Json { text: sub(text, start, end)? })
}

/// The byte at `i`, or 0 past the end (0 is nothing JSON allows outside a string, nor
/// unescaped inside one). Byte tests on it compile to plain compares; `b.get(i) == Some(&c)`
/// stays a call to a generic `PartialEq` in the size-optimised wasm (measured, per-chunk path).
fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

/// Index of the first non-whitespace byte at or after `i` (RFC 8259 §2 `ws`).
fn ws(b: &[u8], mut i: usize) -> usize {
    while matches!(at(b, i), b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// End (exclusive) of the value starting at `i` in text [`parse`] already validated: strings
/// and brackets only, no grammar, so the walks after validation (`get`, `fields`, `items`)
/// cost one byte test per byte instead of re-validating every nested value.
fn skip(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0u32;
    loop {
        let c = at(b, i);
        match c {
            0 => return i,
            b'"' => loop {
                // Plain bytes eight at a time; then a quote, an escape, or the end.
                i = string_run(b, i + 1);
                match at(b, i) {
                    b'\\' => i += 1,
                    b'"' | 0 => break,
                    _ => {}
                }
            },
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth > 0 => depth -= 1,
            b'}' | b']' | b',' | b':' | b' ' | b'\t' | b'\n' | b'\r' if depth == 0 => return i,
            _ => {}
        }
        i += 1;
        if depth == 0 && matches!(c, b'"' | b'}' | b']') {
            return i;
        }
    }
}

/// End (exclusive) of the value starting at `i`, validating it.
/// `parse` and `fields` in one pass, for the hot path (one walk over each event): the
/// members `keys` of a document that must be one valid JSON object; `None` when it is not.
pub fn parse_fields<'a, const N: usize>(text: &'a str, keys: [&str; N]) -> Option<[Option<Json<'a>>; N]> {
    let b = text.as_bytes();
    let start = ws(b, 0);
    if at(b, start) != b'{' {
        return None;
    }
    let mut out = [None; N];
    let end = members(text, start, Some(0), &keys, &mut out)?;
    (ws(b, end) == b.len()).then_some(out)
}

/// Walks the object starting at `i` (its `{`) and fills `out[k]` with the first member named
/// `keys[k]`; validating it at nesting `depth`, or (`None`) an already validated one. Returns
/// the index after the closing `}`.
fn members<'a>(text: &'a str, i: usize, depth: Option<u32>, keys: &[&str], out: &mut [Option<Json<'a>>]) -> Option<usize> {
    let b = text.as_bytes();
    let mut j = ws(b, i + 1);
    if at(b, j) == b'}' {
        return Some(j + 1);
    }
    loop {
        let (kend, escaped) = str_span(b, j)?;
        // Keys almost never carry escapes: compare the raw bytes, unescape only if needed.
        let k = Json { text: sub(text, j, kend)? };
        let raw = sub(text, j + 1, kend - 1)?;
        j = ws(b, kend);
        if at(b, j) != b':' {
            return None;
        }
        let vstart = ws(b, j + 1);
        let vend = match depth {
            Some(d) => value_end(b, vstart, d + 1)?,
            None => skip(b, vstart),
        };
        for (slot, key) in out.iter_mut().zip(keys) {
            // The length first: most keys differ in it, and that test needs no call.
            if slot.is_none() && (if escaped { k.str_eq(key) } else { raw.len() == key.len() && raw == *key }) {
                *slot = Some(Json { text: sub(text, vstart, vend)? });
            }
        }
        j = ws(b, vend);
        match at(b, j) {
            b',' => j = ws(b, j + 1),
            b'}' => return Some(j + 1),
            _ => return None,
        }
    }
}

fn value_end(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    match at(b, i) {
        b'"' => str_end(b, i),
        open @ (b'{' | b'[') => {
            if depth >= MAX_DEPTH {
                return None;
            }
            let close = if open == b'{' { b'}' } else { b']' };
            let mut j = ws(b, i + 1);
            if at(b, j) == close {
                return Some(j + 1);
            }
            loop {
                if open == b'{' {
                    j = ws(b, str_end(b, j)?);
                    if at(b, j) != b':' {
                        return None;
                    }
                    j = ws(b, j + 1);
                }
                j = ws(b, value_end(b, j, depth + 1)?);
                match at(b, j) {
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
    while at(b, i).is_ascii_digit() {
        i += 1;
    }
    (i > start).then_some(i)
}

/// RFC 8259 §6: `-? int frac? exp?` (leading zeros tolerated).
fn num_end(b: &[u8], mut i: usize) -> Option<usize> {
    if at(b, i) == b'-' {
        i += 1;
    }
    i = digits(b, i)?;
    if at(b, i) == b'.' {
        i = digits(b, i + 1)?;
    }
    if matches!(at(b, i), b'e' | b'E') {
        i += 1;
        if matches!(at(b, i), b'+' | b'-') {
            i += 1;
        }
        i = digits(b, i)?;
    }
    Some(i)
}

/// `text[a..b]`, for indices at ASCII bytes of it (quotes, brackets, the first byte of a
/// value, the end) — char boundaries, so no boundary check is needed (`str::get` makes two per
/// slice, on every key and value of every event).
fn sub(text: &str, a: usize, b: usize) -> Option<&str> {
    let s = text.as_bytes().get(a..b)?;
    // SAFETY: `text` is valid UTF-8 and both ends are at ASCII bytes or its ends, which are
    // char boundaries, so the slice is valid UTF-8 too.
    Some(unsafe { core::str::from_utf8_unchecked(s) })
}

/// End (exclusive, after the closing quote) of the string starting at `i` (RFC 8259 §7).
fn str_end(b: &[u8], i: usize) -> Option<usize> {
    str_span(b, i).map(|(end, _)| end)
}

/// `str_end`, and whether the string has an escape.
fn str_span(b: &[u8], i: usize) -> Option<(usize, bool)> {
    if at(b, i) != b'"' {
        return None;
    }
    let mut j = i + 1;
    let mut escaped = false;
    loop {
        j = string_run(b, j); // plain bytes eight at a time
        match at(b, j) {
            b'"' => return Some((j + 1, escaped)),
            b'\\' => match at(b, j + 1) {
                b'u' => {
                    hex4(b, j + 2)?;
                    j += 6;
                    escaped = true;
                }
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                    j += 2;
                    escaped = true;
                }
                _ => return None,
            },
            // Unescaped control characters are not allowed (0: the end); string_run stops
            // at nothing else.
            _ => return None,
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
        let [v] = self.fields([key]);
        v
    }

    /// Several members of an object in one pass (the first of each key; `None` where absent
    /// or for non-objects). Per-event classification needs 4–8 keys of the same object:
    /// one walk instead of one per `get` (measured: ~2.8 → ~1 µs for a 174-byte OpenAI
    /// chunk in Chromium).
    pub fn fields<const N: usize>(self, keys: [&str; N]) -> [Option<Json<'a>>; N] {
        let mut out = [None; N];
        if self.first() == b'{' {
            // Already validated by `parse`: walked, not validated again.
            let _ = members(self.text, 0, None, &keys, &mut out);
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
        Unescape { s: self.str_raw().unwrap_or("").chars() }
    }

    /// Number of Unicode scalar values in a string after unescaping (a `\uD83D\uDE00`
    /// surrogate pair is one; a lone surrogate counts one, as the U+FFFD it renders as).
    pub fn str_chars(self) -> Option<u32> {
        let raw = self.str_raw()?;
        // Without escapes, the bytes that start a char (no decoding; not str's own count,
        // whose unrolled loop is 1 KB of wasm), found in the same pass as the first escape.
        let (mut n, mut esc) = (0, false);
        for c in raw.bytes() {
            n += usize::from(c & 0xC0 != 0x80);
            esc |= c == b'\\';
        }
        let n = if esc { self.chars().count() } else { n };
        Some(u32::try_from(n).unwrap_or(u32::MAX))
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

impl<'a> Items<'a> {
    /// The next element's members `keys` (as `Json::fields`; all `None` for a non-object), in
    /// the one walk that also finds where it ends: `next()` and then `fields` walk each element
    /// twice (per-event classification of `choices`).
    pub fn next_fields<const N: usize>(&mut self, keys: [&str; N]) -> Option<[Option<Json<'a>>; N]> {
        let b = self.text.as_bytes();
        let start = ws(b, self.pos);
        let mut out = [None; N];
        let end = match at(b, start) {
            b']' | 0 => {
                self.pos = usize::MAX;
                return None;
            }
            // Validated by `parse`: the walk cannot fail (else: as if it ran to the end).
            b'{' => members(self.text, start, None, &keys, &mut out).unwrap_or(b.len()),
            _ => skip(b, start),
        };
        let next = ws(b, end);
        self.pos = if at(b, next) == b',' { next + 1 } else { usize::MAX };
        Some(out)
    }
}

impl<'a> Iterator for Items<'a> {
    type Item = Json<'a>;
    fn next(&mut self) -> Option<Json<'a>> {
        let b = self.text.as_bytes();
        let start = ws(b, self.pos);
        let end = match at(b, start) {
            b']' | 0 => None,
            _ => Some(skip(b, start)),
        };
        let Some(end) = end else {
            self.pos = usize::MAX;
            return None;
        };
        let next = ws(b, end);
        self.pos = if at(b, next) == b',' { next + 1 } else { usize::MAX };
        Some(Json { text: sub(self.text, start, end)? })
    }
}

/// Decodes the escapes of a string's raw contents (RFC 8259 §7), one `char` at a time.
#[derive(Clone, Debug)]
pub struct Unescape<'a> {
    // A `Chars` rather than re-slicing a `&str` per char (a boundary check each time: this
    // iterator feeds auto mode's text tail with every answer char).
    s: core::str::Chars<'a>,
}

impl Iterator for Unescape<'_> {
    type Item = char;
    fn next(&mut self) -> Option<char> {
        let c = self.s.next()?;
        if c != '\\' {
            return Some(c);
        }
        // After the backslash.
        let b = self.s.as_str().as_bytes();
        let (ch, used) = match b.first() {
            Some(b'u') => {
                let hi = hex4(b, 1).unwrap_or(0xFFFD);
                let lo = if b.get(5..7) == Some(b"\\u") { hex4(b, 7) } else { None };
                match (hi, lo) {
                    (0xD800..=0xDBFF, Some(lo @ 0xDC00..=0xDFFF)) => {
                        (char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)), 11)
                    }
                    _ => (char::from_u32(hi), 5),
                }
            }
            Some(b'n') => (Some('\n'), 1),
            Some(b't') => (Some('\t'), 1),
            Some(b'r') => (Some('\r'), 1),
            Some(b'b') => (Some('\u{8}'), 1),
            Some(b'f') => (Some('\u{C}'), 1),
            Some(&e) => (Some(e as char), 1), // \" \\ \/
            None => (None, 0),
        };
        self.s = self.s.as_str().get(used..).unwrap_or("").chars();
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
    fn skip_ends_every_validated_value_where_validation_does() {
        let docs = [
            r#"{"a":"x\"}\\","b":[1,{"c":"]"},[]],"d":-1.5e+3,"e":true,"f":null,"g":{},"h":"\u00e9"}"#,
            r#" { "a" : [ 1 , 2 ] , "b" : { "c" : "d" } , "e" : 3 } "#,
            r#"{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}"#,
        ];
        for doc in docs {
            let b = doc.as_bytes();
            let v = parse(doc).unwrap();
            let keys = ["a", "b", "d", "e", "f", "g", "h", "id", "choices"];
            let mut validated = [None; 9];
            members(v.text, 0, Some(0), &keys, &mut validated).unwrap();
            assert_eq!(v.fields(keys), validated, "{doc}");
            // Every value start (after `:`, `,` or `[`, and whitespace; outside strings).
            let (mut in_str, mut esc, mut after) = (false, false, true);
            for i in 0..b.len() {
                let c = b[i];
                if in_str {
                    (in_str, esc) = (esc || c != b'"', !esc && c == b'\\');
                    continue;
                }
                if after && !c.is_ascii_whitespace() && c != b']' {
                    assert_eq!(Some(skip(b, i)), value_end(b, i, 0), "{doc} at {i}");
                }
                after = matches!(c, b':' | b',' | b'[') || (after && c.is_ascii_whitespace());
                in_str = c == b'"';
            }
        }
    }

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
