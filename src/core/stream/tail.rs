//! Text probes: where in the raw answer does the text on screen end?
//!
//! The paint matcher (`paint/delays.rs`) maps a painted length to raw progress proportionally, which
//! drifts wherever markdown shrinks the text unevenly (`**bold**` → `bold`, link URLs vanish):
//! a paint just before a pause then looks short of what had arrived, and the missing chars
//! are charged the whole pause as render delay. A probe fixes that: the browser layer sends
//! the last few dozen chars of the element's text with each paint, and `find` locates them in
//! the tail of the raw answer text.
//!
//! Both sides are normalised by one rule, [`keep`]: ASCII letters and digits and every
//! non-ASCII char except whitespace are kept; ASCII punctuation, symbols and whitespace
//! (markdown's syntax, the renderer's line breaks) are dropped. Case is kept (no case tables in
//! the wasm).
//!
//! Auto mode (no element named) asks the converse: does this element's text show *this*
//! answer? [`TextTail::claim`] answers from the answer's first `HEAD` kept chars (its start)
//! and the ring (its growth).
//!
//! Memory: a ring of the last `CAP` kept chars with their raw positions (8 bytes each, 4 KB),
//! and the first `HEAD` kept chars (128 B), allocated only for requests whose answer element
//! is observed or looked for. Answer text stays in the
//! page's memory only, like the page's own copy of it; it is never encoded into a record.

use alloc::vec::Vec;
use crate::core::stream::markdown::{Markdown, Step};

/// Kept chars remembered (about 600 raw chars of English text): a renderer lagging further
/// behind than that falls back to the proportional mapping.
pub const CAP: usize = 512;
/// Chars of a probe that must match (after normalisation); fewer → no probe.
pub const PROBE: usize = 12;

/// Kept chars remembered from the start of the answer (auto mode's anchor and prefix check).
pub const HEAD: usize = 32;
/// Kept chars of the answer's start a candidate element must contain (all of them when the
/// answer is shorter so far): 8 survive markdown (a leading link's URL is further in).
pub const ANCHOR: usize = 8;

/// What a chat UI draws around an answer and no answer text is: whitespace, and the non-ASCII
/// chars `keep` drops (a `●` in-progress dot, a `▍` cursor, `…`). ASCII punctuation is not: a
/// literal `#` or `-` on screen is the answer's markdown, shown as typed.
pub fn chrome(c: char) -> bool {
    c.is_whitespace() || (!c.is_ascii() && !keep(c))
}

/// Whether the last `len` UTF-16 units of `probe` (an element's last chars) are all `chrome`:
/// a frame showing `len` chars of that element showed nothing of the answer. False when the
/// probe is shorter than `len` (it does not tell) or `len` is 0.
pub fn chrome_only(probe: &str, len: u32) -> bool {
    if len == 0 {
        return false;
    }
    let mut n = 0usize;
    for c in probe.chars().rev() {
        if n >= len as usize {
            return true;
        }
        if !chrome(c) {
            return false;
        }
        n += c.len_utf16();
    }
    n >= len as usize
}

/// The normalisation rule shared by the answer text and the probes.
pub fn keep(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    // Non-ASCII whitespace: NBSP, the U+2000 block's spaces and zero-widths, line/paragraph
    // separators, narrow NBSP, math space, ideographic space, BOM. And what chat UIs draw
    // around streaming text as text of their own: bullets and ellipses (U+2022, U+2026), a
    // cursor or caret of the Block Elements and Geometric Shapes blocks (▍ █ ● ▌, U+2580–25FF)
    // at the answer's end, which no markdown source carries.
    !matches!(
        c,
        '\u{a0}'
            | '\u{2000}'..='\u{200f}'
            | '\u{2022}'
            | '\u{2026}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{2580}'..='\u{25ff}'
            | '\u{3000}'
            | '\u{feff}'
    )
}

/// Auto mode's answer for one element's text ([`TextTail::claim_or_maybe`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Claim {
    No,
    /// The answer's start after other text, too short yet to tell.
    Maybe,
    /// The UTF-16 offset where the answer starts, and whether only markup comes before it.
    Yes(u32, bool),
}

/// The last `PROBE` kept chars of a probe, fed in order (O(1) per char, no allocation).
#[derive(Default)]
struct Window {
    buf: [char; PROBE],
    n: usize,
}

impl Window {
    fn push(&mut self, c: char) {
        if keep(c) {
            self.buf[self.n % PROBE] = c;
            self.n += 1;
        }
    }

    /// Its k-th char of the last `PROBE` (0 = oldest), read in place (no rotated copy:
    /// `rotate_left` alone cost ~0.3 KB of wasm).
    fn at(&self, k: usize) -> char {
        self.buf[(self.n + k) % PROBE]
    }
}

#[derive(Clone, Debug, Default)]
pub struct TextTail {
    /// (char, raw chars up to and including it), a ring once full.
    ring: Vec<(char, u32)>,
    /// Next write index when full.
    head: usize,
    /// Raw answer chars fed so far (every char counts, kept or not).
    pub pos: u32,
    /// Raw chars before the first one fed (0: this tail saw the answer from its start).
    start: u32,
    /// Kept chars fed so far.
    kept: u32,
    /// The first `HEAD` kept chars, when fed from the start.
    first: [char; HEAD],
    /// Markdown that renders as no text (a fence's language, list numbers, link URLs): not
    /// kept, as the screen never shows it (`markdown.rs`).
    md: Markdown,
}

impl TextTail {
    /// A tail whose first char fed will be raw char `pos + 1` (earlier text was not kept).
    pub fn starting_at(pos: u32) -> TextTail {
        TextTail { pos, start: pos, ..TextTail::default() }
    }

    pub fn push(&mut self, c: char) {
        self.pos = self.pos.saturating_add(1);
        match self.md.step(c, self.pos) {
            Step::Pass => self.add(c, self.pos),
            Step::Drop | Step::Hold => {}
            Step::Release(pass) => {
                self.release();
                if pass {
                    self.add(c, self.pos);
                }
            }
        }
    }

    /// The held digits at a line's start were text.
    fn release(&mut self) {
        let mut md = core::mem::take(&mut self.md);
        md.take_held().for_each(|(d, at)| self.add(d, at));
        self.md = md;
    }

    fn add(&mut self, c: char, pos: u32) {
        if !keep(c) {
            return;
        }
        if let Some(slot) = self.first.get_mut(self.kept as usize) {
            *slot = c;
        }
        self.kept = self.kept.saturating_add(1);
        if self.ring.len() < CAP {
            if self.ring.capacity() == 0 {
                self.ring.reserve_exact(CAP);
            }
            self.ring.push((c, pos));
        } else if let Some(slot) = self.ring.get_mut(self.head) {
            *slot = (c, pos);
            self.head = (self.head + 1) % CAP;
        }
    }

    /// The i-th kept char in arrival order (0 = oldest remembered).
    fn at(&self, i: usize) -> Option<(char, u32)> {
        let n = self.ring.len();
        if i >= n {
            return None;
        }
        self.ring.get((self.head + i) % n.max(1)).copied()
    }

    /// Raw progress (chars) shown by a screen ending with `probe`: through an occurrence of
    /// its last `PROBE` kept chars and the dropped chars after it (whitespace, markdown
    /// syntax: nothing visible is missing), i.e. up to the next kept char, or to everything
    /// fed. Repetitive text (lists, code) can hold several occurrences: the one nearest `near`
    /// (an estimate of the progress) wins, else the latest. None: too short a probe, or not in
    /// the remembered tail.
    ///
    /// The probe goes through the same markdown rules as the answer (`markdown.rs`, from inside
    /// a line: a probe is cut anywhere): a screen that shows the markdown source as typed (a
    /// plain-text chat; a typewriter revealing the raw text) shows an ordered list's numbers and
    /// a fence's language, which the answer side dropped; a rendered screen has none of them to
    /// drop (but a code box's line opening with `1. `, which it cannot tell from a list: such a
    /// probe fails). With `keep` alone every probe across a `1.` or a ```` ```js ```` failed, and a
    /// failed probe at the end reads as "the end is on screen" (`PaintTracker::
    /// final_paint_seen`): a typewriter's record closed with a third of the answer unshown
    /// (tests/e2e/realui.spec.js, assistant-ui's smooth text).
    pub fn find(&self, probe: &str, near: Option<f64>) -> Option<u32> {
        let mut want = Window::default();
        let mut md = Markdown::mid_line();
        for c in probe.chars() {
            match md.step(c, 0) {
                Step::Pass => want.push(c),
                Step::Drop | Step::Hold => {}
                Step::Release(pass) => {
                    md.take_held().for_each(|(d, _)| want.push(d));
                    if pass {
                        want.push(c);
                    }
                }
            }
        }
        if want.n < PROBE {
            return None;
        }
        self.find_kept(&want, near)
    }

    fn find_kept(&self, want: &Window, near: Option<f64>) -> Option<u32> {
        let mut best: Option<u32> = None;
        for end in (PROBE - 1..self.ring.len()).rev() {
            if !(0..PROBE).all(|k| self.at(end + 1 - PROBE + k).is_some_and(|(c, _)| c == want.at(k))) {
                continue;
            }
            let pos = self.at(end + 1).map_or(self.pos, |(_, next)| next - 1);
            let Some(near) = near else { return Some(pos) };
            let d = |p: u32| (p as f64 - near).abs();
            if best.is_none_or(|b| d(pos) < d(b)) {
                best = Some(pos);
            }
        }
        best
    }

    /// The answer's i-th kept char (0 = its first), when still remembered.
    fn answer_at(&self, i: usize) -> Option<char> {
        if self.start != 0 {
            return None;
        }
        let kept = self.kept as usize;
        if i >= kept {
            return self.md.held().get(i - kept).map(|x| x.0);
        }
        let in_ring = kept - self.ring.len();
        match self.first.get(i) {
            Some(c) if i < kept => Some(*c),
            _ if i >= in_ring => self.at(i - in_ring).map(|(c, _)| c),
            _ => None,
        }
    }

    /// Auto mode: does `text` (a candidate element's whole text) show this answer? It must
    /// contain the answer's start (its first `ANCHOR` kept chars, the last occurrence) and from
    /// there show a prefix of the answer: char for char while within the remembered head,
    /// else ending with `PROBE` kept chars found in the ring (the growth; markdown may have
    /// dropped chars in between). A match shorter than `PROBE` kept chars must be all of the
    /// element's text (a "Paris" ending someone's question is not an answer starting "Paris").
    /// Returns the UTF-16 offset in `text` where the answer starts (0 when nothing but
    /// markup and whitespace comes before it: `clean`), or None.
    pub fn claim(&self, text: &str) -> Option<(u32, bool)> {
        match self.claim_or_maybe(text) {
            Claim::Yes(base, clean) => Some((base, clean)),
            Claim::No | Claim::Maybe => None,
        }
    }

    /// As [`TextTail::claim`], telling "no" from "not yet": `Maybe` when the text shows the
    /// answer's start after other text, but too little of it to tell it from other text
    /// (fewer than `PROBE` kept chars) — a renderer's label ("JavaScript") before the first
    /// line of code. Auto mode waits for more rather than settle for an element inside.
    pub fn claim_or_maybe(&self, text: &str) -> Claim {
        // Digits held at the end (an answer "42" so far: nothing after them said they are not
        // a list number) count, as `answer_at` does.
        let kept = self.kept as usize + self.md.held().len();
        if self.start != 0 || kept == 0 {
            return Claim::No;
        }
        // (kept char, UTF-16 offset just after it)
        let mut k: Vec<(char, u32)> = Vec::new();
        let mut off = 0u32;
        for c in text.chars() {
            off += c.len_utf16() as u32;
            if keep(c) {
                k.push((c, off));
            }
        }
        // (An element shorter than the anchor must be all answer: checked below.)
        let m = ANCHOR.min(kept).min(k.len());
        if m == 0 {
            return Claim::No;
        }
        let Some(s) = (0..=k.len() - m).rev().find(|&s| (0..m).all(|i| self.answer_at(i) == k.get(s + i).map(|x| x.0))) else {
            return Claim::No;
        };
        let rest = k.len() - s;
        let clean = s == 0;
        if rest < PROBE && !clean {
            // The rest must be the answer's start char for char (rest < PROBE ≤ HEAD: all in
            // the remembered head).
            let prefix = (0..rest).all(|i| self.answer_at(i) == k.get(s + i).map(|x| x.0));
            return if prefix { Claim::Maybe } else { Claim::No };
        }
        let shows = if rest <= HEAD {
            (0..rest).all(|i| self.answer_at(i) == k.get(s + i).map(|x| x.0))
        } else {
            let mut want = Window::default();
            k[k.len() - PROBE..].iter().for_each(|x| want.push(x.0));
            self.find_kept(&want, None).is_some()
        };
        let base = if clean { 0 } else { k.get(s - 1).map_or(0, |x| x.1) };
        if shows {
            Claim::Yes(base, clean)
        } else {
            Claim::No
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fed(s: &str) -> TextTail {
        let mut t = TextTail::default();
        s.chars().for_each(|c| t.push(c));
        t
    }

    #[test]
    fn markdown_rendered_tails_find_their_raw_position() {
        let raw = "# Title\n\nSome **bold** text, a [link](https://x.example/a) and `code`.\n- item one\n- item twö 🚀";
        let t = fed(raw);
        assert_eq!(t.pos as usize, raw.chars().count());
        // What a markdown renderer's textContent ends with at various points.
        let at = |prefix: &str| prefix.chars().count() as u32;
        assert_eq!(t.find("Title Some bold text", None), Some(at("# Title\n\nSome **bold** text, ")));
        // A link's URL is in the raw text only, and not kept there either (markdown.rs): a probe
        // across it matches.
        assert_eq!(t.find("bold text, a link", None), Some(at("# Title\n\nSome **bold** text, a [link](https://x.example/a) ")));
        assert_eq!(t.find("text, a link and code", None), Some(at("# Title\n\nSome **bold** text, a [link](https://x.example/a) and `code`.\n- ")));
        assert_eq!(t.find("item one\nitem twö 🚀", None), Some(at(raw)));
        // Too short after normalisation, or not there.
        assert_eq!(t.find("twö 🚀", None), None);
        assert_eq!(t.find("nothing like this here", None), None);
    }

    #[test]
    fn latest_occurrence_wins_and_the_ring_is_bounded() {
        let unit = "alpha beta gamma delta. ";
        let mut t = TextTail::default();
        for _ in 0..200 {
            unit.chars().for_each(|c| t.push(c));
        }
        assert_eq!(t.ring.len(), CAP);
        assert_eq!(t.ring.capacity(), CAP);
        let per = unit.chars().count() as u32;
        assert_eq!(t.find("beta gamma delta", None), Some(200 * per));
        // Repeated text: the occurrence nearest the estimate.
        assert_eq!(t.find("beta gamma delta", Some(190.0 * per as f64)), Some(190 * per));
        // Text that scrolled out of the ring is not found.
        let mut t = fed("the very first words of the answer ");
        for _ in 0..100 {
            "zzzzzzzz ".chars().for_each(|c| t.push(c));
        }
        assert_eq!(t.find("very first words", None), None);
    }

    #[test]
    fn claim_finds_the_answer_and_nothing_else() {
        let answer = "Paris is the capital of **France**. It has [museums](https://x.example/m) and cafés.";
        let t = fed(answer);
        // The element showing it, whole or partly (a streamed or throttled UI), or rendered.
        assert_eq!(t.claim("Paris is the cap"), Some((0, true)));
        assert_eq!(t.claim("\n  Paris"), Some((0, true)));
        assert_eq!(t.claim("Paris is the capital of France. It has museums"), Some((0, true)));
        // Past a link, whose URL only the raw text has (and is not kept there either); the raw
        // markdown with it is not what a screen shows.
        assert_eq!(t.claim("Paris is the capital of France. It has museums and cafés."), Some((0, true)));
        assert_eq!(t.claim(answer), None);
        // After other text (a container with the user's question and an earlier answer): the
        // offset where it starts, once long enough to tell.
        let before = "You: where is Paris? Bot: Paris is nice.\n";
        let with = |s: &str| format!("{before}{s}");
        // From just after the last letter before it ("nice"): punctuation and whitespace
        // between count as the answer's, as the markup around a named element's text does.
        let base = (before.find("nice").unwrap() + 4) as u32;
        assert_eq!(t.claim(&with("Paris is the capital")), Some((base, false)));
        assert_eq!(t.claim(&with("Paris is")), None);
        // Not the answer: the question ending with its first word, a clock, other text, text
        // running past what the answer says, an empty answer.
        assert_eq!(t.claim("Tell me about Paris"), None);
        assert_eq!(t.claim("12:00:01"), None);
        assert_eq!(t.claim("Paris is the capital of Spain"), None);
        assert_eq!(t.claim("Paris is the capital of France and something else entirely"), None);
        assert_eq!(TextTail::default().claim("anything"), None);
        // A tail that did not see the start cannot claim.
        let mut late = TextTail::starting_at(3);
        answer.chars().for_each(|c| late.push(c));
        assert_eq!(late.claim(answer), None);
        // Short answers so far: all of the element's text, char for char.
        let t = fed("Hi");
        assert_eq!(t.claim("Hi"), Some((0, true)));
        assert_eq!(t.claim("Oh, Hi"), None);
        assert_eq!(t.claim("H"), Some((0, true)));
        assert_eq!(t.claim("- "), None);
        assert_eq!(t.claim("Him"), None);
        // UTF-16 offsets past astral chars.
        let t = fed("🚀 launch sequence started now");
        assert_eq!(t.claim("🚀🚀 x: 🚀 launch sequence started"), Some(("🚀🚀 x".encode_utf16().count() as u32, false)));
    }

    #[test]
    fn claim_sees_through_markdown_that_renders_as_no_text() {
        // A fence naming its language (issue 29): the language is a class or a label on screen,
        // never the code's first letters.
        let t = fed("```js\nconst start = performance.now();\nconst reply = await fetch('/x');\n");
        assert_eq!(t.claim("const"), Some((0, true)));
        assert_eq!(t.claim("const start = performance.now();\nconst"), Some((0, true)));
        // A label of the renderer's own wording before the code: once the code is long enough
        // to tell it from other text, with the offset after the label.
        assert_eq!(t.claim("JavaScript\nconst start"), None);
        assert_eq!(t.claim_or_maybe("JavaScript\nconst start"), Claim::Maybe);
        assert_eq!(t.claim_or_maybe("JavaScript\nconst stop"), Claim::No);
        assert_eq!(t.claim_or_maybe("JavaScript\nconst"), Claim::No); // shorter than the anchor
        assert_eq!(t.claim_or_maybe("Tell me about const"), Claim::No);
        assert_eq!(t.claim("JavaScript\nconst start = performance"), Some((10, false)));
        assert_eq!(t.claim("js Copy\nconst start = performance"), Some((7, false)));
        // A list, a heading, a numbered list: bullets, `#` and numbers are not on screen.
        let t = fed("- Open the *network* panel and start a trace;\n- send");
        assert_eq!(t.claim("Open"), Some((0, true)));
        assert_eq!(t.claim("Open the network panel and start a trace;\nsend"), Some((0, true)));
        let t = fed("## Three steps to a faster answer\n\n1. Stream the response\n2. Render it");
        assert_eq!(t.claim("Three steps"), Some((0, true)));
        assert_eq!(t.claim("Three steps to a faster answer\nStream the response\nRender it"), Some((0, true)));
        let t = fed("1. Stream the response instead\n2. Render");
        assert_eq!(t.claim("Stream"), Some((0, true)));
        assert_eq!(t.claim("1. Stream"), None);
        // A link opening the answer: its text only.
        let t = fed("[Paris](https://x.example/paris) is the capital");
        assert_eq!(t.claim("Paris is the capital"), Some((0, true)));
        // A cursor the UI draws after the text.
        let t = fed("Paris is the capital of France and");
        assert_eq!(t.claim("Paris is the capital▍"), Some((0, true)));
        assert_eq!(t.claim("Paris is the capital of France and ●"), Some((0, true)));
        // An answer that is a number so far (held as a possible list number): still claimed.
        let t = fed("42");
        assert_eq!(t.claim("42"), Some((0, true)));
        assert_eq!(t.claim("4"), Some((0, true)));
        assert_eq!(t.claim("43"), None);
    }

    #[test]
    fn probes_find_code_and_numbered_lists() {
        let raw = "```js\nconst a = 1;\n```\n\n1. first step here\n2. second step here\n3. Keep it.\n\n```js\nlet b = 2;\n```\n";
        let t = fed(raw);
        let at = |prefix: &str| prefix.chars().count() as u32;
        let steps = "```js\nconst a = 1;\n```\n\n1. first step here\n2. second step ";
        // Rendered: list numbers are markers, a fence's language a class.
        assert_eq!(t.find("first step here\nsecond step", None), Some(at(steps)));
        assert_eq!(t.find("const a = 1;\nfirst", None), Some(at("```js\nconst a = 1;\n```\n\n1. first ")));
        // Shown as typed (a plain-text chat, a typewriter over the raw text): the numbers and the
        // language are on screen, and dropped from the probe as from the answer.
        assert_eq!(t.find("first step here\n2. second step", None), Some(at(steps)));
        assert_eq!(t.find("second step here\n3. K", None), Some(at("```js\nconst a = 1;\n```\n\n1. first step here\n2. second step here\n3. K")));
        assert_eq!(t.find("here\n3. Keep it.\n\n```js\nlet b", None), Some(at(&raw[..raw.rfind("2;").unwrap()])));
        // A number inside a line is text on both sides: no match where the answer has none.
        assert_eq!(t.find("first step here 2 second step", None), None);
    }

    #[test]
    fn chrome_only_frames_show_no_answer() {
        // assistant-ui's in-progress dot alone, a cursor alone: nothing of the answer.
        assert!(chrome_only(" ●", 2));
        assert!(chrome_only("Earlier answer.\n▍", 2));
        // Markdown shown as typed is the answer's; so is any letter among the shown chars.
        assert!(!chrome_only("#", 1));
        assert!(!chrome_only("- ", 2));
        assert!(!chrome_only("Hi ●", 4));
        // The probe must cover what was shown; nothing shown is not a question.
        assert!(!chrome_only(" ●", 3));
        assert!(!chrome_only(" ●", 0));
    }

    #[test]
    fn claim_of_a_long_answer_uses_head_and_ring() {
        let mut text = String::from("Start of a long answer. ");
        for i in 0..300 {
            text.push_str(&format!("w{i} x{}. ", i * i));
        }
        let t = fed(&text);
        assert!(t.ring.len() == CAP && t.kept as usize > CAP + HEAD);
        assert_eq!(t.claim(&text), Some((0, true)));
        // A buffered UI's first paint: everything at once; a prefix well behind the front.
        let cut: String = text.chars().take(text.len() - 200).collect();
        assert_eq!(t.claim(&cut), Some((0, true)));
        // Behind by more than the ring: the growth cannot be told from other text.
        let early: String = text.chars().take(400).collect();
        assert_eq!(t.claim(&early), None);
    }

    #[test]
    fn normalisation() {
        for c in ['a', 'Z', '7', 'é', '日', '🚀', '—'] {
            assert!(keep(c), "{c}");
        }
        for c in [' ', '\n', '*', '#', '`', '[', ')', '-', '\u{a0}', '\u{200d}', '\u{3000}', '▍', '●', '•', '…'] {
            assert!(!keep(c), "{c:?}");
        }
    }
}
