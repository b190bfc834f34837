//! Plain-text layout for the comparison: an aligned table whose text columns wrap so that the
//! whole fits a width, and prose wrapped at spaces.

/// How a column's cells line up.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Align {
    /// Text: may wrap onto further lines when the table is too wide.
    Left,
    /// Numbers: never wrap.
    Right,
}

/// Columns are separated by this many spaces.
const GAP: usize = 2;
/// A wrapping column is never made narrower than this (or its header).
const MIN_WRAP: usize = 12;

/// Characters, not bytes: `µ`, `·`, `→` and `–` take one column each (volley's output has no
/// wide characters).
fn width(s: &str) -> usize {
    s.chars().count()
}

/// The header, a rule and the rows, each column as wide as its widest cell; with `max`, the
/// widest text columns are narrowed (their cells wrapping onto further lines) until the table
/// fits `max` characters, as far as they can be.
pub(super) fn table(columns: &[(&str, Align)], rows: &[Vec<String>], max: Option<usize>) -> String {
    let mut w: Vec<usize> = columns.iter().map(|(h, _)| width(h)).collect();
    for r in rows {
        for (w, cell) in w.iter_mut().zip(r) {
            *w = (*w).max(cell.split('\n').map(width).max().unwrap_or(0));
        }
    }
    if let Some(max) = max {
        narrow(&mut w, columns, max);
    }
    let header: Vec<String> = columns.iter().map(|(h, _)| h.to_string()).collect();
    let mut out = line(&header, &w, columns);
    out += &line(
        &w.iter().map(|n| "-".repeat(*n)).collect::<Vec<_>>(),
        &w,
        columns,
    );
    let wrapped: Vec<Vec<Vec<String>>> = rows
        .iter()
        .map(|r| r.iter().zip(&w).map(|(cell, n)| wrap(cell, *n)).collect())
        .collect();
    let height = |r: &Vec<Vec<String>>| r.iter().map(Vec::len).max().unwrap_or(1);
    // Rows of several lines are told apart by an empty line between rows.
    let spaced = wrapped.iter().any(|r| height(r) > 1);
    for (i, wrapped) in wrapped.iter().enumerate() {
        if spaced && i > 0 {
            out.push('\n');
        }
        for k in 0..height(wrapped) {
            let cells: Vec<String> = wrapped
                .iter()
                .map(|c| c.get(k).cloned().unwrap_or_default())
                .collect();
            out += &line(&cells, &w, columns);
        }
    }
    out
}

/// Narrows the widest text column, one character at a time, until the table fits `max` or no
/// text column can give more.
fn narrow(w: &mut [usize], columns: &[(&str, Align)], max: usize) {
    let total = |w: &[usize]| w.iter().sum::<usize>() + GAP * w.len().saturating_sub(1);
    while total(w) > max {
        let widest = (0..w.len())
            .filter(|&i| columns[i].1 == Align::Left && w[i] > MIN_WRAP.max(width(columns[i].0)))
            .max_by_key(|&i| w[i]);
        match widest {
            Some(i) => w[i] -= 1,
            None => return,
        }
    }
}

/// One line of the table, its cells padded to `w` by their column's alignment.
fn line(cells: &[String], w: &[usize], columns: &[(&str, Align)]) -> String {
    let mut s = String::new();
    for ((cell, n), (_, align)) in cells.iter().zip(w).zip(columns) {
        let pad = " ".repeat(n.saturating_sub(width(cell)));
        match align {
            Align::Left => {
                s += cell;
                s += &pad;
            }
            Align::Right => {
                s += &pad;
                s += cell;
            }
        }
        s += &" ".repeat(GAP);
    }
    s.trim_end().to_string() + "\n"
}

/// `text` as lines of at most `max` characters, broken at its newlines and at spaces; a word
/// longer than a line is cut. Never empty (an empty text is one empty line).
pub(super) fn wrap(text: &str, max: usize) -> Vec<String> {
    if text.contains('\n') {
        return text.split('\n').flat_map(|t| wrap(t, max)).collect();
    }
    let max = max.max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut word: Vec<char> = word.chars().collect();
        while word.len() > max {
            if !cur.is_empty() {
                lines.push(std::mem::take(&mut cur));
            }
            lines.push(word.drain(..max).collect());
        }
        let word: String = word.into_iter().collect();
        if cur.is_empty() {
            cur = word;
        } else if width(&cur) + 1 + width(&word) <= max {
            cur.push(' ');
            cur += &word;
        } else {
            lines.push(std::mem::replace(&mut cur, word));
        }
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

/// Prose wrapped to `max` characters a line, continuation lines indented by `indent` spaces;
/// each line of `text` (split at `\n`) is wrapped on its own.
pub(super) fn paragraph(text: &str, max: usize, indent: usize) -> String {
    let mut out = String::new();
    for part in text.split('\n') {
        let first = wrap(part, max);
        let (head, rest) = first.split_first().expect("wrap is never empty");
        out += head;
        out.push('\n');
        let rest = rest.join(" ");
        if !rest.is_empty() {
            for l in wrap(&rest, max - indent.min(max - 1)) {
                out += &" ".repeat(indent);
                out += &l;
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_wrap_at_spaces_and_long_words_are_cut() {
        assert_eq!(wrap("a bb ccc", 4), ["a bb", "ccc"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 4), [""]);
        assert_eq!(wrap("µµµ µ", 5), ["µµµ µ"], "characters, not bytes");
        assert_eq!(
            wrap("1,000.0\n980.0–1,020.0", 20),
            ["1,000.0", "980.0–1,020.0"]
        );
    }

    #[test]
    fn a_wide_table_fits_by_wrapping_its_text_columns() {
        let cols = [
            ("name", Align::Left),
            ("n", Align::Right),
            ("verdict", Align::Left),
        ];
        let rows = vec![vec![
            "a rather long scenario name with axes".to_string(),
            "12,345.6".to_string(),
            "no significant difference (p=0.40)".to_string(),
        ]];
        let natural = table(&cols, &rows, None);
        assert!(natural.lines().any(|l| width(l) > 60), "{natural}");
        let fitted = table(&cols, &rows, Some(60));
        assert!(fitted.lines().all(|l| width(l) <= 60), "{fitted}");
        assert!(fitted.lines().count() > 3, "cells wrapped: {fitted}");
        assert!(fitted.contains("12,345.6"), "numbers stay whole: {fitted}");
    }

    #[test]
    fn paragraphs_indent_their_continuation() {
        let p = paragraph("[1] one two three four", 10, 4);
        assert_eq!(p, "[1] one\n    two\n    three\n    four\n");
        assert!(paragraph(&"x".repeat(30), 10, 2)
            .lines()
            .all(|l| width(l) <= 10));
    }
}
