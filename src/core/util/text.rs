//! The one string bound: every string the core keeps from outside (header values, names,
//! descriptions, script URLs) is cut with `truncate`, so no input can grow a record; model and
//! provider names are also held to a charset (`name`), because they become keys downstream
//! (Prometheus labels, dashboard tables, OTLP attributes).

use alloc::string::String;

/// Chars kept of a model or provider name. Real ids fit with room to spare: Hugging Face repo
/// ids (`meta-llama/Llama-3.1-70B-Instruct`, a name at most 96 chars), Bedrock ids
/// (`us.anthropic.claude-3-5-sonnet-20241022-v2:0`), fine-tunes (`ft:gpt-4o-mini:org::id`).
pub const MAX_NAME: usize = 128;

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

/// A model or provider name as a record carries it: surrounding whitespace dropped, at most
/// `MAX_NAME` chars, every char outside ASCII letters, digits and `-._:/@+` replaced by `_`
/// (the charset of model ids; no quote, space, angle bracket or control char survives);
/// `None` when nothing is left. Takes chars (a JSON string's, unescaped on the fly), so a
/// megabyte-long value costs `MAX_NAME` chars of memory, never more.
pub fn name(chars: impl Iterator<Item = char>) -> Option<String> {
    // ASCII whitespace only (Unicode's table would cost the wasm for nothing: any other char
    // becomes `_` anyway). Whitespace inside becomes `_` once a non-space follows it.
    let mut out = String::new();
    let mut spaces = 0;
    for c in chars.skip_while(char::is_ascii_whitespace).take(MAX_NAME) {
        if c.is_ascii_whitespace() {
            spaces += 1;
            continue;
        }
        for _ in 0..spaces {
            out.push('_');
        }
        spaces = 0;
        out.push(match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '.' | '_' | ':' | '/' | '@' | '+' => c,
            _ => '_',
        });
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_model_ids_and_bound_the_rest() {
        let n = |s: &str| name(s.chars());
        for id in ["gpt-4o-2024-08-06", "claude-sonnet-4-5-20250929", "meta-llama/Llama-3.1-8B-Instruct", "us.anthropic.claude-3-5-sonnet-20241022-v2:0", "ft:gpt-4o-mini:org::abc123", "llama3.2:latest", "gpt-4o@2024+x", "azure.ai.openai"] {
            assert_eq!(n(id).as_deref(), Some(id));
        }
        assert_eq!(n("  gpt-4o \\n").as_deref(), Some("gpt-4o__n"), "a JSON escape is the caller's to decode: `\\` is `_`");
        assert_eq!(n("\t gpt 4o mini \r\n").as_deref(), Some("gpt_4o_mini"));
        assert_eq!(n("<img src=x onerror=alert(1)>").as_deref(), Some("_img_src_x_onerror_alert_1__"));
        assert_eq!(n("modèle-中文").as_deref(), Some("mod_le-__"), "one `_` per char, not per byte");
        assert_eq!(n("a\u{0}b\u{7f}\"'").as_deref(), Some("a_b___"));
        assert_eq!(n(""), None);
        assert_eq!(n(" \t\n "), None);
        let long = "x".repeat(10_000);
        assert_eq!(n(&long).unwrap().len(), MAX_NAME);
        let wide = "é".repeat(1_000);
        assert_eq!(n(&wide).unwrap(), "_".repeat(MAX_NAME));
    }

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
