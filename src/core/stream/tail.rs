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
//! Memory: a ring of the last `CAP` kept chars with their raw positions (8 bytes each, 4 KB),
//! allocated only for requests whose answer element is observed. Answer text stays in the
//! page's memory only, like the page's own copy of it; it is never encoded into a record.

use alloc::vec::Vec;

/// Kept chars remembered (about 600 raw chars of English text): a renderer lagging further
/// behind than that falls back to the proportional mapping.
pub const CAP: usize = 512;
/// Chars of a probe that must match (after normalisation); fewer → no probe.
pub const PROBE: usize = 12;

/// The normalisation rule shared by the answer text and the probes.
pub fn keep(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    // Non-ASCII whitespace: NBSP, the U+2000 block's spaces and zero-widths, line/paragraph
    // separators, narrow NBSP, math space, ideographic space, BOM.
    !matches!(c, '\u{a0}' | '\u{2000}'..='\u{200f}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}')
}

#[derive(Clone, Debug, Default)]
pub struct TextTail {
    /// (char, raw chars up to and including it), a ring once full.
    ring: Vec<(char, u32)>,
    /// Next write index when full.
    head: usize,
    /// Raw answer chars fed so far (every char counts, kept or not).
    pub pos: u32,
}

impl TextTail {
    /// A tail whose first char fed will be raw char `pos + 1` (earlier text was not kept).
    pub fn starting_at(pos: u32) -> TextTail {
        TextTail { pos, ..TextTail::default() }
    }

    pub fn push(&mut self, c: char) {
        self.pos = self.pos.saturating_add(1);
        if !keep(c) {
            return;
        }
        if self.ring.len() < CAP {
            if self.ring.capacity() == 0 {
                self.ring.reserve_exact(CAP);
            }
            self.ring.push((c, self.pos));
        } else if let Some(slot) = self.ring.get_mut(self.head) {
            *slot = (c, self.pos);
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
    pub fn find(&self, probe: &str, near: Option<f64>) -> Option<u32> {
        let mut want = [' '; PROBE];
        let mut n = 0;
        for c in probe.chars().rev().filter(|c| keep(*c)) {
            want[PROBE - 1 - n] = c;
            n += 1;
            if n == PROBE {
                break;
            }
        }
        if n < PROBE {
            return None;
        }
        let mut best: Option<u32> = None;
        for end in (PROBE - 1..self.ring.len()).rev() {
            if !(0..PROBE).all(|k| self.at(end + 1 - PROBE + k).is_some_and(|(c, _)| c == want[k])) {
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
        assert_eq!(t.find("bold text, a link", None), Some(at("# Title\n\nSome **bold** text, a [link](")));
        // A link's URL is in the raw text only: a probe across it does not match (the
        // proportional mapping stands in).
        assert_eq!(t.find("text, a link and code", None), None);
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
    fn normalisation() {
        for c in ['a', 'Z', '7', 'é', '日', '🚀', '—'] {
            assert!(keep(c), "{c}");
        }
        for c in [' ', '\n', '*', '#', '`', '[', ')', '-', '\u{a0}', '\u{200d}', '\u{3000}'] {
            assert!(!keep(c), "{c:?}");
        }
    }
}
