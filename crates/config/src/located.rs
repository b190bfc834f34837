//! Errors located in a file volley reads (a suite file, a requests file): the file cannot be
//! read, or something at `file:line:column` in it is wrong (docs/contract.md, exit code 2).
//! One error type and one reader of positions for both files.

use toml::de::DeTable;
use toml::Spanned;

/// A file that cannot be used: unreadable, or wrong at a place in it.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// Something at a place in the file is wrong.
    #[error("{file}:{line}:{column}: {message}")]
    At {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// The key concerned, when there is one.
        key: Option<String>,
        /// What is wrong, starting with where in the file (`[[request]] 2: weight: …`,
        /// `[[scenario]] "x": key: …`).
        message: String,
    },
}

/// The error at byte offset `at` of `text` (the file `file`), about `key` when there is one.
pub(crate) fn error_at(
    text: &str,
    file: &str,
    at: usize,
    key: Option<&str>,
    message: String,
) -> FileError {
    let (line, column) = line_col(text, at);
    FileError::At {
        file: file.to_string(),
        line,
        column,
        key: key.map(str::to_string),
        message,
    }
}

/// The spanned TOML document of `text`; a syntax error points at where the parser stopped.
pub(crate) fn parse<'t>(text: &'t str, file: &str) -> Result<Spanned<DeTable<'t>>, FileError> {
    DeTable::parse(text).map_err(|e| {
        let at = e.span().map_or(0, |s| s.start);
        error_at(text, file, at, None, e.message().trim_end().to_string())
    })
}

/// 1-based line and column (in characters) of byte offset `at` of `text` (an offset inside a
/// character counts as that character).
pub(crate) fn line_col(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_lines_and_characters() {
        assert_eq!(line_col("", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("é=1", 2), (1, 2), "characters, not bytes");
        assert_eq!(
            line_col("é", 1),
            (1, 1),
            "inside a character: that character"
        );
        assert_eq!(line_col("ab", 99), (1, 3), "past the end: the end");
    }

    #[test]
    fn syntax_errors_point_where_the_parser_stopped() {
        let e = parse("a = 1\nb = \n", "f.toml").unwrap_err();
        let FileError::At { file, line, .. } = e else {
            panic!("{e}")
        };
        assert_eq!((file.as_str(), line), ("f.toml", 2));
    }
}
