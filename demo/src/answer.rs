//! The answer text and its split into "tokens".
//!
//! Owner of: what the scripted model says. The text is deliberately awkward for a client-side
//! decoder and renderer: markdown structure (heading, list, fenced code), non-ASCII letters that
//! are 2 and 3 bytes in UTF-8, and emoji of 4 bytes including a ZWJ sequence (👩‍💻) that must not
//! be cut into separate tokens, since a real tokenizer would never hand out half a grapheme's
//! codepoints as "text" in a way that a chat UI paints separately.
//!
//! Tokens are "word-ish": leading whitespace is glued to the next word (as in BPE vocabularies,
//! " word"), and trailing punctuation is a token of its own. The concatenation of all tokens is
//! exactly the text, so `tokens=N` with N a multiple of the token count repeats the text whole.

use std::sync::OnceLock;

/// The answer. Ends with a blank line so that cyclic repetition starts a fresh markdown block.
pub const ANSWER: &str = "# Streaming answers, measured\n\
\n\
Real-user monitoring sees what the person in front of the screen waited for: the *first token*, \
the first painted word, and every stall in between. Server dashboards stop at the first byte \
written; the browser knows the rest.\n\
\n\
Things that make streamed text hard to measure:\n\
\n\
- prefill queues that delay the first token;\n\
- proxies that buffer a whole answer, then flush it at once;\n\
- decoders that split a naïve café Ünïcödé string, or 日本語, across chunks;\n\
- emoji such as 🚀, 🎉 and 👩‍💻 that span several code points.\n\
\n\
```rust\n\
fn ttft(start: f64, first_token: f64) -> f64 {\n\
\x20   first_token - start // milliseconds\n\
}\n\
```\n\
\n\
In short: measure **where the user is**, and link each answer to its server trace. ✅\n\
\n";

/// The answers a request can ask for (`answer=NAME`; default [`ANSWER`]): markdown-heavy texts
/// that open the way chat answers do and renderers stumble on (tests/e2e/realui.spec.js). Each
/// ends with a blank line, as [`ANSWER`] does.
pub static ANSWERS: &[(&str, &str)] = &[
    ("default", ANSWER),
    // A list first: a renderer shows a bullet (or a literal "-") before any word.
    (
        "list",
        "- Open the *network* panel and start a trace;\n\
- send the prompt, then watch the first chunk arrive;\n\
- compare it with the first painted word.\n\
\n\
The gap between the last two is what the **renderer** costs: parsing, highlighting and layout.\n\
\n",
    ),
    // A fence naming its language first: its info string is a class (`language-js`) or a label
    // ("JavaScript") on screen, never the code's text.
    (
        "code",
        "```js\n\
const start = performance.now();\n\
const reply = await fetch('/v1/chat/completions', { method: 'POST' });\n\
console.log(performance.now() - start); // ms to headers\n\
```\n\
\n\
That logs the time to headers only: the first **token** comes later, and its paint later still.\n\
\n",
    ),
    // A heading of the second level, then a numbered list (its numbers are list markers on
    // screen, not text).
    (
        "steps",
        "## Three steps to a faster answer\n\
\n\
1. Stream the response instead of waiting for all of it.\n\
2. Render each token as it arrives, without re-parsing everything.\n\
3. Keep the main thread free while text streams in.\n\
\n\
Each step moves the *first painted word* closer to the first token.\n\
\n",
    ),
];

/// The text of answer `name`, if there is one.
pub fn named(name: &str) -> Option<&'static str> {
    ANSWERS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The tokens of [`ANSWER`], computed once.
pub fn tokens() -> &'static [&'static str] {
    tokens_of(ANSWER)
}

/// The tokens of one of [`ANSWERS`], computed once per answer.
pub fn tokens_of(text: &'static str) -> &'static [&'static str] {
    static TOKENS: OnceLock<Vec<Vec<&'static str>>> = OnceLock::new();
    let all = TOKENS.get_or_init(|| ANSWERS.iter().map(|(_, t)| tokenize(t)).collect());
    match ANSWERS.iter().position(|(_, t)| t.as_ptr() == text.as_ptr() && t.len() == text.len()) {
        Some(i) => &all[i],
        // [`ANSWER`] itself: a `const`, whose copies need not share the static's address.
        None => &all[0],
    }
}

/// Content token `i` of an answer of any length: the text repeats cyclically.
pub fn token(i: u64) -> &'static str {
    token_of(ANSWER, i)
}

/// Content token `i` of answer `text` (one of [`ANSWERS`]), repeating cyclically.
pub fn token_of(text: &'static str, i: u64) -> &'static str {
    let t = tokens_of(text);
    t[(i % t.len() as u64) as usize]
}

/// The full text of an answer of `n` tokens (used for non-stream bodies and format epilogues
/// that repeat the whole text, e.g. OpenAI Responses' `output_text.done`).
pub fn text(n: u64) -> String {
    text_of(ANSWER, n)
}

/// As [`text`], of answer `text` (one of [`ANSWERS`]).
pub fn text_of(text: &'static str, n: u64) -> String {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(token_of(text, i));
    }
    s
}

/// Splits text into word-ish tokens whose concatenation is the input.
///
/// Rules: a token is optional leading whitespace followed by either a run of "word" characters
/// (anything that is not whitespace and not ASCII punctuation), or one ASCII punctuation
/// character. Whitespace at the very end becomes its own token. Zero-width joiners and variation
/// selectors count as word characters, so a ZWJ emoji sequence stays in one token.
pub fn tokenize(text: &str) -> Vec<&str> {
    let b = text.char_indices().collect::<Vec<_>>();
    let mut out = Vec::new();
    let mut i = 0;
    let n = b.len();
    let byte_at = |k: usize| if k < n { b[k].0 } else { text.len() };
    while i < n {
        let start = i;
        while i < n && b[i].1.is_whitespace() {
            i += 1;
        }
        if i < n {
            if b[i].1.is_ascii_punctuation() {
                i += 1;
            } else {
                while i < n && !b[i].1.is_whitespace() && !b[i].1.is_ascii_punctuation() {
                    i += 1;
                }
            }
        }
        out.push(&text[byte_at(start)..byte_at(i)]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_concatenate_to_text() {
        assert_eq!(tokens().concat(), ANSWER);
        assert!(
            tokens().len() > 100,
            "answer should be long enough: {}",
            tokens().len()
        );
        assert!(tokens().iter().all(|t| !t.is_empty()));
    }

    #[test]
    fn tokenizer_is_deterministic_and_word_ish() {
        assert_eq!(
            tokenize("Hello, wörld!\n\n- a"),
            vec!["Hello", ",", " wörld", "!", "\n\n-", " a"]
        );
        assert_eq!(tokenize("  "), vec!["  "]);
        assert_eq!(tokenize(""), Vec::<&str>::new());
        assert_eq!(tokenize(ANSWER), tokenize(ANSWER));
    }

    #[test]
    fn zwj_emoji_and_cjk_stay_whole() {
        assert!(tokens().contains(&" 👩‍💻"));
        assert!(tokens().contains(&" 日本語"));
        assert!(tokens().contains(&" naïve"));
    }

    #[test]
    fn every_answer_tokenizes_whole_and_ends_a_block() {
        for (name, text) in ANSWERS {
            assert_eq!(tokens_of(text).concat(), *text, "{name}");
            assert!(text.ends_with("\n\n"), "{name}");
            assert_eq!(named(name), Some(*text));
        }
        assert_eq!(tokens_of(named("code").unwrap())[..4], ["`", "`", "`", "js"]);
        assert_eq!(named("nope"), None);
    }

    #[test]
    fn text_repeats_cyclically() {
        let n = tokens().len() as u64;
        assert_eq!(text(n), ANSWER);
        assert_eq!(text(2 * n + 3), format!("{ANSWER}{ANSWER}{}", text(3)));
        assert_eq!(token(n), token(0));
    }
}
