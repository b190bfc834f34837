//! Reading the spanned TOML tree of a suite file: typed getters whose errors carry the
//! `file:line:column` of the value and the key it belongs to, so every message can point at
//! the exact place in the file.

use std::fmt;
use std::ops::Range;
use std::path::Path;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::SuiteError;
use crate::located;

/// A TOML value with the byte range it came from.
pub(super) type Val<'a> = Spanned<DeValue<'a>>;

/// The tables a suite may repeat (`[[server]]`, `[[scenario]]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ArrayTable {
    /// `[[server]]`.
    Server,
    /// `[[scenario]]`.
    Scenario,
}

impl ArrayTable {
    /// The top-level key holding the array (`server`).
    pub(super) fn key(self) -> &'static str {
        match self {
            ArrayTable::Server => "server",
            ArrayTable::Scenario => "scenario",
        }
    }
}

impl fmt::Display for ArrayTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// Spans to file:line:column, and typed getters with messages that name the key.
pub(super) struct TomlReader<'t> {
    text: &'t str,
    file: String,
}

impl<'t> TomlReader<'t> {
    /// A reader of `text`; `path` only names the file in messages.
    pub(super) fn new(text: &'t str, path: &Path) -> Self {
        TomlReader {
            text,
            file: path.display().to_string(),
        }
    }

    /// The spanned document, and the same file as JSON (kept in `suite.json`). A syntax
    /// error points at where the TOML parser stopped.
    pub(super) fn document(&self) -> Result<(Spanned<DeTable<'t>>, serde_json::Value), SuiteError> {
        let doc = located::parse(self.text, &self.file)?;
        let raw_table: toml::Table = toml::from_str(self.text)
            .map_err(|e| self.err(e.span().unwrap_or(0..0), None, e.message().to_string()))?;
        let raw = serde_json::to_value(&raw_table).unwrap_or(serde_json::Value::Null);
        Ok((doc, raw))
    }

    /// The empty span at the end of the file, for what the file lacks altogether.
    pub(super) fn end(&self) -> Range<usize> {
        self.text.len()..self.text.len()
    }

    /// An error at the start of `span`, about `key` when there is one.
    pub(super) fn err(&self, span: Range<usize>, key: Option<&str>, message: String) -> SuiteError {
        located::error_at(self.text, &self.file, span.start, key, message)
    }

    /// `v` as a table.
    pub(super) fn table<'a>(
        &self,
        v: &'a Val<'a>,
        at: &str,
        key: &str,
    ) -> Result<&'a DeTable<'a>, SuiteError> {
        match v.get_ref() {
            DeValue::Table(t) => Ok(t),
            other => Err(self.err(
                v.span(),
                Some(key),
                format!("{at}: `{key}` must be a table, not a {}", other.type_str()),
            )),
        }
    }

    /// The tables of `[[kind]]` in file order (none when `v` is absent).
    pub(super) fn array_of_tables<'a>(
        &self,
        v: Option<&'a Val<'a>>,
        kind: ArrayTable,
    ) -> Result<Vec<&'a Val<'a>>, SuiteError> {
        let key = kind.key();
        match v {
            None => Ok(Vec::new()),
            Some(v) => match v.get_ref() {
                DeValue::Array(a) => Ok(a.iter().collect()),
                other => Err(self.err(
                    v.span(),
                    Some(key),
                    format!(
                        "`{key}` must be an array of tables ([[{key}]]), not a {}",
                        other.type_str()
                    ),
                )),
            },
        }
    }

    /// The `name` of a `[[server]]` or `[[scenario]]`: present, unique among `taken`, and
    /// usable in file names.
    pub(super) fn name(
        &self,
        t: &DeTable,
        table: &Val,
        kind: ArrayTable,
        taken: &[&str],
    ) -> Result<String, SuiteError> {
        let name = self.req_str(t, "name", &format!("[[{kind}]]"), table.span())?;
        let at = format!("[[{kind}]] \"{name}\"");
        let span = t.get("name").map(|v| v.span()).unwrap_or(table.span());
        if taken.contains(&name.as_str()) {
            return Err(self.err(
                span,
                Some("name"),
                format!("{at}: a {kind} with this name already exists"),
            ));
        }
        if !safe_name(&name) {
            return Err(self.err(
                span,
                Some("name"),
                format!("{at}: name may hold letters, digits, `-`, `_` and `.` only (it names result files)"),
            ));
        }
        Ok(name)
    }

    /// Refuses the first key of `t` that is not one of `keys`.
    pub(super) fn known(&self, t: &DeTable, keys: &[&str], at: &str) -> Result<(), SuiteError> {
        for (k, _) in t.iter() {
            if !keys.contains(&k.get_ref().as_ref()) {
                return Err(self.err(
                    k.span(),
                    Some(k.get_ref()),
                    format!(
                        "{at}: unknown key `{}` (expected one of: {})",
                        k.get_ref(),
                        keys.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Refuses the first of `others` present in `t`, which cannot go with `key`.
    pub(super) fn exclusive(
        &self,
        t: &DeTable,
        at: &str,
        key: &str,
        others: &[&str],
    ) -> Result<(), SuiteError> {
        for o in others {
            if let Some(v) = t.get(*o) {
                return Err(self.err(
                    v.span(),
                    Some(o),
                    format!("{at}: `{o}` cannot be combined with `{key}`"),
                ));
            }
        }
        Ok(())
    }

    /// `v` as a string.
    pub(super) fn str(&self, v: &Val, at: &str, key: &str) -> Result<String, SuiteError> {
        match v.get_ref() {
            DeValue::String(s) => Ok(s.to_string()),
            other => Err(self.err(
                v.span(),
                Some(key),
                format!("{at}: {key}: must be a string, not a {}", other.type_str()),
            )),
        }
    }

    /// The string `key` of `t`; its absence is pointed at the table (`table_span`).
    pub(super) fn req_str(
        &self,
        t: &DeTable,
        key: &str,
        at: &str,
        table_span: Range<usize>,
    ) -> Result<String, SuiteError> {
        match t.get(key) {
            Some(v) => self.str(v, at, key),
            None => Err(self.err(table_span, Some(key), format!("{at}: missing `{key}`"))),
        }
    }

    /// `v` as a boolean.
    pub(super) fn bool(&self, v: &Val, at: &str, key: &str) -> Result<bool, SuiteError> {
        match v.get_ref() {
            DeValue::Boolean(b) => Ok(*b),
            other => Err(self.err(
                v.span(),
                Some(key),
                format!(
                    "{at}: {key}: must be true or false, not a {}",
                    other.type_str()
                ),
            )),
        }
    }

    /// `v` as an integer, in any radix and with `_` separators.
    pub(super) fn int(&self, v: &Val, at: &str, key: &str) -> Result<i64, SuiteError> {
        match v.get_ref() {
            DeValue::Integer(i) => i64::from_str_radix(&i.as_str().replace('_', ""), i.radix())
                .map_err(|_| self.err(v.span(), Some(key), format!("{at}: {key}: not an integer"))),
            other => Err(self.err(
                v.span(),
                Some(key),
                format!(
                    "{at}: {key}: must be an integer, not a {}",
                    other.type_str()
                ),
            )),
        }
    }
}

/// Whether `s` can name a result file: letters, digits, `-`, `_` and `.`, not hidden.
fn safe_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !s.starts_with('.')
}

#[cfg(test)]
mod tests {
    use super::super::testing::err;

    #[test]
    fn syntax_error_has_line_and_column() {
        let (line, col, _, _) = err("[suite]\nname = \"t\"\nduration = \n");
        assert_eq!(line, 3);
        assert!(col >= 11, "column {col}");
    }
}
