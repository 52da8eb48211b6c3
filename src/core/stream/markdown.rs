//! Markdown whose letters and digits never reach the screen as text, for the text probes
//! (`tail.rs`): a fenced code block's info string (```` ```js ```` renders as a class,
//! `language-js`, or as a label of the renderer's own wording, "JavaScript"), an ordered list's
//! numbers (`1.` renders as a list marker: CSS `::marker`, not in `textContent`) and a link's
//! or image's destination (`[text](https://…)` shows only `text`). Punctuation (`#`, `-`,
//! `*`, backticks) needs nothing here: `tail::keep` drops all ASCII punctuation on both sides.
//!
//! A char-at-a-time state machine over the raw answer (O(1) per char, a few bytes of state),
//! after CommonMark's block rules, simplified: up to 3 spaces (or any, inside a list) before a
//! block marker, a fence of 3+ backticks or tildes whose line's rest is its info string, an
//! ordered-list number of up to 9 digits followed by `.` or `)` and a space or line end. A
//! number at a line's start is held until the char after its `.`/`)` says what it is (the
//! answer "42" alone stays held: `TextTail::claim` counts held digits as text). Inside a fenced
//! block nothing is dropped but the closing fence (code's `f[0](x)` and `1.` are text there).
//! Misreading costs a probe (the proportional mapping stands in) or a later `claim`, never a
//! wrong one: both sides of a match are normalised, and the screen side keeps every letter.

/// Digits an ordered-list number can have (CommonMark: 1–9).
const MAX_DIGITS: usize = 9;

/// What to do with a raw char.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// An ordinary char (`tail::keep` still decides whether it counts).
    Pass,
    /// Markdown that renders as no text: skip it.
    Drop,
    /// A line's leading digit, held until it is known not to be a list number.
    Hold,
    /// The held digits were text after all: release them (`Markdown::take_held`), then treat
    /// this char as `Pass` (true) or `Drop` (false).
    Release(bool),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Line {
    /// Only indentation (or `>` quote markers) so far on this line.
    Start,
    /// Fence chars at the line's start: (which, how many).
    Fence(char, u8),
    /// The rest of an opening fence's line: its info string.
    Info,
    /// Digits at the line's start (held), then whether the `.`/`)` came.
    Number(bool),
    /// Past the line's block markers.
    Text,
}

#[derive(Clone, Debug)]
pub struct Markdown {
    line: Line,
    /// Inside a fenced code block.
    code: bool,
    /// The previous char was `]` (a link's text ended: `(` opens its destination).
    bracket: bool,
    /// Depth of parentheses inside a link destination (0: not in one).
    dest: u8,
    held: [(char, u32); MAX_DIGITS],
    n_held: usize,
}

impl Default for Markdown {
    fn default() -> Markdown {
        Markdown { line: Line::Start, code: false, bracket: false, dest: 0, held: [('0', 0); MAX_DIGITS], n_held: 0 }
    }
}

impl Markdown {
    /// A machine that starts inside a line's text (a probe: the end of what a screen shows,
    /// cut anywhere): only what follows its first line break can be a block marker.
    pub fn mid_line() -> Markdown {
        Markdown { line: Line::Text, ..Markdown::default() }
    }

    /// The held digits (with their raw positions), oldest first; clears them.
    pub fn take_held(&mut self) -> impl Iterator<Item = (char, u32)> + '_ {
        let n = core::mem::take(&mut self.n_held);
        self.held[..n].iter().copied()
    }

    /// The digits held (with their raw positions), oldest first.
    pub fn held(&self) -> &[(char, u32)] {
        &self.held[..self.n_held]
    }

    /// Raw char `c`, the `pos`-th of the answer.
    pub fn step(&mut self, c: char, pos: u32) -> Step {
        if c == '\n' {
            let was = self.line;
            self.line = Line::Start;
            self.bracket = false;
            self.dest = 0;
            return match was {
                // A fence line ended: a block opens or closes.
                Line::Fence(_, n) if n >= 3 => {
                    self.code = !self.code;
                    Step::Drop
                }
                Line::Info => {
                    self.code = true;
                    Step::Drop
                }
                // "1." then the line's end: an empty list item.
                Line::Number(true) => {
                    self.n_held = 0;
                    Step::Drop
                }
                Line::Number(false) => Step::Release(true),
                _ => Step::Pass,
            };
        }
        match self.line {
            Line::Start => self.start(c, pos),
            Line::Fence(f, n) => {
                if c == f {
                    self.line = Line::Fence(f, n.saturating_add(1));
                    Step::Drop
                } else if n >= 3 && !self.code {
                    self.line = Line::Info;
                    Step::Drop
                } else {
                    // Not a fence (inline code at the line's start), or text after a closing
                    // fence: ordinary text.
                    self.line = Line::Text;
                    self.text(c)
                }
            }
            Line::Info => Step::Drop,
            Line::Number(dot) => {
                if !dot && c.is_ascii_digit() && self.n_held < MAX_DIGITS {
                    self.hold(c, pos)
                } else if !dot && (c == '.' || c == ')') {
                    self.line = Line::Number(true);
                    Step::Drop
                } else if dot && (c == ' ' || c == '\t') {
                    // A list marker: its number is never text on screen.
                    self.n_held = 0;
                    self.line = Line::Start;
                    Step::Drop
                } else {
                    self.line = Line::Text;
                    let s = self.text(c);
                    Step::Release(s == Step::Pass)
                }
            }
            Line::Text => self.text(c),
        }
    }

    fn start(&mut self, c: char, pos: u32) -> Step {
        match c {
            ' ' | '\t' | '>' => Step::Pass,
            '`' | '~' => {
                self.line = Line::Fence(c, 1);
                Step::Drop
            }
            '0'..='9' if !self.code => {
                self.line = Line::Number(false);
                self.hold(c, pos)
            }
            _ => {
                self.line = Line::Text;
                self.text(c)
            }
        }
    }

    fn hold(&mut self, c: char, pos: u32) -> Step {
        if let Some(slot) = self.held.get_mut(self.n_held) {
            *slot = (c, pos);
            self.n_held += 1;
        }
        Step::Hold
    }

    /// A char past the line's block markers: link destinations are dropped (outside code).
    fn text(&mut self, c: char) -> Step {
        if self.code {
            return Step::Pass;
        }
        let after_bracket = core::mem::replace(&mut self.bracket, c == ']' && self.dest == 0);
        if self.dest > 0 {
            match c {
                '(' => self.dest = self.dest.saturating_add(1),
                ')' => self.dest -= 1,
                _ => {}
            }
            return Step::Drop;
        }
        if after_bracket && c == '(' {
            self.dest = 1;
            return Step::Drop;
        }
        Step::Pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    /// The chars of `raw` that can be text on screen.
    fn shown(raw: &str) -> String {
        let mut m = Markdown::default();
        let mut out = String::new();
        for (i, c) in raw.chars().enumerate() {
            match m.step(c, i as u32 + 1) {
                Step::Pass => out.push(c),
                Step::Drop | Step::Hold => {}
                Step::Release(pass) => {
                    out.extend(m.take_held().map(|(d, _)| d));
                    if pass {
                        out.push(c);
                    }
                }
            }
        }
        out.extend(m.take_held().map(|(d, _)| d));
        out
    }

    #[test]
    fn fence_info_strings_are_not_text() {
        assert_eq!(shown("```js\nconst x = 1;\n```\nDone"), "const x = 1;\nDone");
        assert_eq!(shown("~~~~ python title=\"a.py\"\nprint(1)\n~~~~\n"), "print(1)\n");
        // A bare fence; inline code at a line's start is text.
        assert_eq!(shown("```\nx\n```\n"), "x\n");
        assert_eq!(shown("`ls` lists files"), "ls` lists files");
        // Inside code, a line starting with backticks is not an opening fence's info string.
        assert_eq!(shown("```sh\necho `date`\n```\n"), "echo `date`\n");
    }

    #[test]
    fn ordered_list_numbers_are_markers() {
        assert_eq!(shown("1. One\n2) Two\n10. Ten\n"), "One\nTwo\nTen\n");
        // Not list numbers: a number starting a sentence, a decimal, a number alone so far.
        assert_eq!(shown("2024 was a year.\n"), "2024 was a year.\n");
        assert_eq!(shown("3.14 is pi\n"), "314 is pi\n"); // (the `.` is punctuation: dropped anyway)
        assert_eq!(shown("42"), "42");
        assert_eq!(shown("42\n"), "42\n");
        // Inside code, numbers are text.
        assert_eq!(shown("```\n1. x\n```\n"), "1. x\n");
        // An empty item.
        assert_eq!(shown("1.\nNext"), "Next");
    }

    #[test]
    fn link_destinations_are_not_text() {
        assert_eq!(shown("See [the docs](https://x.example/a_(b)) now"), "See [the docs] now");
        assert_eq!(shown("![logo](/l.png) hi"), "![logo] hi");
        // Brackets without a destination; code keeps its calls.
        assert_eq!(shown("a [b] (c)"), "a [b] (c)");
        assert_eq!(shown("```\nf[0](x)\n```\n"), "f[0](x)\n");
    }

    #[test]
    fn held_digits_keep_their_positions() {
        let mut m = Markdown::default();
        assert_eq!(m.step('1', 1), Step::Hold);
        assert_eq!(m.step('2', 2), Step::Hold);
        assert_eq!(m.held(), [('1', 1), ('2', 2)]);
        assert_eq!(m.step('a', 3), Step::Release(true));
        assert_eq!(m.take_held().collect::<alloc::vec::Vec<_>>(), [('1', 1), ('2', 2)]);
        assert!(m.held().is_empty());
    }
}
