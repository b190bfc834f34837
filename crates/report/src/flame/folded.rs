//! Brendan Gregg's folded stacks: one line per distinct stack, `frame;frame;…;leaf COUNT`,
//! root first. [`Folded::parse`] reads them strictly (a typed error names the line) and
//! within bounds (a hostile or huge file is refused, not loaded); [`Folded::write`] writes
//! them back sorted, so the text round-trips.

use std::collections::BTreeMap;

/// The most lines [`Folded::parse`] reads: a profile of a few minutes at 499 Hz has far
/// fewer distinct stacks.
pub const MAX_LINES: usize = 1_000_000;

/// The longest frame name [`Folded::parse`] takes, in bytes.
pub const MAX_FRAME_BYTES: usize = 4096;

/// The most frames a stack may have: deep recursion in a JVM profile stays well within it,
/// while a line of millions of tiny frames (a tree of millions of nodes) is refused.
pub const MAX_STACK_FRAMES: usize = 8192;

/// Why folded stacks could not be read. Line numbers count from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FoldedError {
    /// A line with no space before a count.
    #[error("line {line}: no sample count after the stack (expected `frame;frame;leaf COUNT`)")]
    NoCount {
        /// The line.
        line: usize,
    },
    /// The count is not a whole number (a sign, a fraction, a word, or too large).
    #[error("line {line}: the count `{text}` is not a whole number of samples")]
    BadCount {
        /// The line.
        line: usize,
        /// The count as written (cut to 40 characters).
        text: String,
    },
    /// A count but no stack before it.
    #[error("line {line}: a count without a stack")]
    EmptyStack {
        /// The line.
        line: usize,
    },
    /// Two separators in a row, or one at either end of the stack.
    #[error("line {line}: an empty frame in the stack (`;;` or `;` at either end)")]
    EmptyFrame {
        /// The line.
        line: usize,
    },
    /// A frame longer than [`MAX_FRAME_BYTES`].
    #[error("line {line}: a frame of {bytes} bytes, longer than the {MAX_FRAME_BYTES} allowed")]
    FrameTooLong {
        /// The line.
        line: usize,
        /// The frame's length.
        bytes: usize,
    },
    /// A stack of more than [`MAX_STACK_FRAMES`] frames.
    #[error("line {line}: a stack of more than {MAX_STACK_FRAMES} frames")]
    TooDeep {
        /// The line.
        line: usize,
    },
    /// More than [`MAX_LINES`] lines.
    #[error("more than {MAX_LINES} lines: not a profile volley reads")]
    TooManyLines,
    /// The samples add up to more than a u64 holds.
    #[error("line {line}: the sample counts add up to more than 2^64")]
    Overflow {
        /// The line.
        line: usize,
    },
}

/// Distinct stacks with their sample counts. Each stack is its frames joined by `;`, root
/// first; duplicates are merged and zero counts dropped, so equal profiles compare equal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Folded {
    stacks: BTreeMap<String, u64>,
    total: u64,
}

impl Folded {
    /// Reads folded stacks. Blank lines are skipped; trailing whitespace and CRLF endings are
    /// tolerated; a stack may hold spaces (C++ signatures), the count is what follows the
    /// last one.
    pub fn parse(text: &str) -> Result<Folded, FoldedError> {
        let mut f = Folded::default();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            if line > MAX_LINES {
                return Err(FoldedError::TooManyLines);
            }
            let trimmed = raw.trim();
            if trimmed.is_empty() {
                continue;
            }
            let (stack, count) = split_line(trimmed, line)?;
            f.add(stack, count).ok_or(FoldedError::Overflow { line })?;
        }
        Ok(f)
    }

    /// Adds `count` samples of `stack` (already checked); None when the total overflows.
    fn add(&mut self, stack: &str, count: u64) -> Option<()> {
        if count == 0 {
            return Some(());
        }
        self.total = self.total.checked_add(count)?;
        match self.stacks.get_mut(stack) {
            Some(c) => *c += count,
            None => {
                self.stacks.insert(stack.to_string(), count);
            }
        }
        Some(())
    }

    /// The stacks as text: one line per stack, sorted by stack, each ending in `\n`.
    /// `Folded::parse(&f.write())` is `f` again.
    pub fn write(&self) -> String {
        let mut o = String::new();
        for (stack, count) in &self.stacks {
            o.push_str(stack);
            o.push(' ');
            o.push_str(&count.to_string());
            o.push('\n');
        }
        o
    }

    /// Every sample: the sum of the counts.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Distinct stacks.
    pub fn len(&self) -> usize {
        self.stacks.len()
    }

    /// No samples at all.
    pub fn is_empty(&self) -> bool {
        self.stacks.is_empty()
    }

    /// Each distinct stack (frames joined by `;`, root first) with its count, sorted by stack.
    pub fn stacks(&self) -> impl Iterator<Item = (&str, u64)> {
        self.stacks.iter().map(|(s, c)| (s.as_str(), *c))
    }
}

/// A trimmed, non-empty line as its stack and count, both checked.
fn split_line(line_text: &str, line: usize) -> Result<(&str, u64), FoldedError> {
    let Some((stack, count)) = line_text.rsplit_once([' ', '\t']) else {
        // One word: a count alone has no stack, anything else no count.
        return Err(match parse_count(line_text, line) {
            Ok(_) => FoldedError::EmptyStack { line },
            Err(_) => FoldedError::NoCount { line },
        });
    };
    let stack = stack.trim_end();
    let count = parse_count(count, line)?;
    for (depth, frame) in stack.split(';').enumerate() {
        if depth == MAX_STACK_FRAMES {
            return Err(FoldedError::TooDeep { line });
        }
        if frame.is_empty() {
            return Err(FoldedError::EmptyFrame { line });
        }
        if frame.len() > MAX_FRAME_BYTES {
            return Err(FoldedError::FrameTooLong {
                line,
                bytes: frame.len(),
            });
        }
    }
    Ok((stack, count))
}

/// Digits only: no sign, no fraction, no exponent.
fn parse_count(text: &str, line: usize) -> Result<u64, FoldedError> {
    let bad = || FoldedError::BadCount {
        line,
        text: text.chars().take(40).collect(),
    };
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    text.parse().map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_stacks_and_merges_duplicates() {
        let f =
            Folded::parse("srv;main;burn 10\nsrv;main;parse 3\r\nsrv;main;burn 5  \n\n").unwrap();
        assert_eq!(f.total(), 18);
        assert_eq!(f.len(), 2);
        let v: Vec<_> = f.stacks().collect();
        assert_eq!(v, [("srv;main;burn", 15), ("srv;main;parse", 3)]);
    }

    #[test]
    fn a_frame_may_hold_spaces_and_zero_counts_are_dropped() {
        let f = Folded::parse("app;Foo::bar(int, char const*) 7\napp;idle 0\n").unwrap();
        assert_eq!(
            f.stacks().collect::<Vec<_>>(),
            [("app;Foo::bar(int, char const*)", 7)]
        );
        assert_eq!(f.total(), 7);
    }

    #[test]
    fn writes_sorted_text_that_reads_back_the_same() {
        let text = "b;c 2\na;b 1\nb;c 3\na 4\n";
        let f = Folded::parse(text).unwrap();
        let out = f.write();
        assert_eq!(out, "a 4\na;b 1\nb;c 5\n");
        assert_eq!(Folded::parse(&out).unwrap(), f);
        assert_eq!(Folded::parse("").unwrap().write(), "");
    }

    #[test]
    fn bad_lines_are_named_by_number() {
        let cases: [(&str, FoldedError); 7] = [
            ("a;b 1\na;b\n", FoldedError::NoCount { line: 2 }),
            (
                "a;b 1.5",
                FoldedError::BadCount {
                    line: 1,
                    text: "1.5".into(),
                },
            ),
            (
                "\na;b -3",
                FoldedError::BadCount {
                    line: 2,
                    text: "-3".into(),
                },
            ),
            (
                "a;b x",
                FoldedError::BadCount {
                    line: 1,
                    text: "x".into(),
                },
            ),
            ("a 1\nmain;f", FoldedError::NoCount { line: 2 }),
            ("a 1\nb 2\n;  12", FoldedError::EmptyFrame { line: 3 }),
            ("a;;b 1", FoldedError::EmptyFrame { line: 1 }),
        ];
        for (text, want) in cases {
            assert_eq!(Folded::parse(text), Err(want), "{text:?}");
        }
        let huge = "99999999999999999999999";
        assert!(matches!(
            Folded::parse(&format!("a {huge}")),
            Err(FoldedError::BadCount { line: 1, .. })
        ));
        let msg = Folded::parse("ok 1\nbroken").unwrap_err().to_string();
        assert!(msg.starts_with("line 2: "), "{msg}");
    }

    #[test]
    fn a_count_alone_is_an_empty_stack() {
        assert_eq!(
            Folded::parse("12"),
            Err(FoldedError::EmptyStack { line: 1 })
        );
        assert_eq!(
            Folded::parse("x 1\n\t 12 \r\n"),
            Err(FoldedError::EmptyStack { line: 2 })
        );
        assert_eq!(
            Folded::parse("main;f"),
            Err(FoldedError::NoCount { line: 1 })
        );
    }

    #[test]
    fn hostile_sizes_are_refused() {
        let long = format!("a;{} 1", "x".repeat(MAX_FRAME_BYTES + 1));
        assert_eq!(
            Folded::parse(&long),
            Err(FoldedError::FrameTooLong {
                line: 1,
                bytes: MAX_FRAME_BYTES + 1
            })
        );
        let exact = format!("a;{} 1", "x".repeat(MAX_FRAME_BYTES));
        assert!(Folded::parse(&exact).is_ok());
        let deep = vec!["f"; MAX_STACK_FRAMES].join(";");
        assert!(Folded::parse(&format!("{deep} 1")).is_ok());
        assert_eq!(
            Folded::parse(&format!("x 1\n{deep};g 1")),
            Err(FoldedError::TooDeep { line: 2 })
        );
        let many = "\n".repeat(MAX_LINES) + "a 1\n";
        assert_eq!(Folded::parse(&many), Err(FoldedError::TooManyLines));
        let max = u64::MAX;
        assert_eq!(
            Folded::parse(&format!("a {max}\nb 1")),
            Err(FoldedError::Overflow { line: 2 })
        );
    }
}
