//! Typed getters over the spanned TOML tree of a requests file: each error carries the line,
//! column and key of the value at fault.

use super::*;

/// A byte for messages: `a space`, `a control character (0x0a)`.
pub(super) fn describe_byte(b: u8) -> String {
    if b == b' ' {
        "a space".into()
    } else {
        format!("a control character (0x{b:02x})")
    }
}

/// A TOML type with its article: `a string`, `an integer`, `an array`.
pub(super) fn a_type(t: &str) -> String {
    if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {t}")
    } else {
        format!("a {t}")
    }
}

/// Typed getters whose errors carry the position of the value and its key.
pub(super) struct Reader<'s, 't> {
    pub(super) src: &'s Source<'t>,
}

impl Reader<'_, '_> {
    /// Where `written` (a placeholder) is in the file within the value `v`: the text as
    /// written, else its part before the first character a TOML string may escape, else the
    /// value's start.
    pub(super) fn find(&self, v: &Val, written: &str) -> usize {
        let span = v.span();
        let raw = &self.src.text[span.clone()];
        let plain = written
            .find(|c: char| c == '"' || c == '\\' || c.is_control())
            .map_or(written, |i| &written[..i]);
        [written, plain]
            .iter()
            .filter(|w| !w.is_empty())
            .find_map(|w| raw.find(*w))
            .map_or(span.start, |i| span.start + i)
    }

    /// An error about the value `v` of `key`.
    pub(super) fn at(&self, v: &Val, at: &str, key: &str, message: String) -> RequestsError {
        self.src
            .err(v.span().start, Some(key), format!("{at}: {key}: {message}"))
    }

    /// A value of a type `key` does not take; `what` says which it takes.
    pub(super) fn wrong_type(&self, v: &Val, at: &str, key: &str, what: &str) -> RequestsError {
        self.at(
            v,
            at,
            key,
            format!("must be {what}, not {}", a_type(v.get_ref().type_str())),
        )
    }

    /// `v` as a table.
    pub(super) fn table<'a>(
        &self,
        v: &'a Val<'a>,
        at: &str,
        key: &str,
    ) -> Result<&'a DeTable<'a>, RequestsError> {
        match v.get_ref() {
            DeValue::Table(t) => Ok(t),
            _ => Err(self.wrong_type(v, at, key, "a table")),
        }
    }

    /// Refuses the first key of `t` that is not one of `keys`.
    pub(super) fn known(&self, t: &DeTable, keys: &[&str], at: &str) -> Result<(), RequestsError> {
        for (k, _) in t.iter() {
            if !keys.contains(&k.get_ref().as_ref()) {
                return Err(self.src.err(
                    k.span().start,
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

    /// `v` as a string.
    pub(super) fn str<'a>(
        &self,
        v: &'a Val<'a>,
        at: &str,
        key: &str,
    ) -> Result<&'a str, RequestsError> {
        match v.get_ref() {
            DeValue::String(s) => Ok(s.as_ref()),
            _ => Err(self.wrong_type(v, at, key, "a string")),
        }
    }

    /// `v` as one string or a non-empty list of them, each with its value.
    pub(super) fn strings<'a>(
        &self,
        v: &'a Val<'a>,
        at: &str,
        key: &str,
    ) -> Result<Vec<(&'a str, &'a Val<'a>)>, RequestsError> {
        match v.get_ref() {
            DeValue::String(s) => Ok(vec![(s.as_ref(), v)]),
            DeValue::Array(a) if a.is_empty() => {
                Err(self.at(v, at, key, "an empty list (leave the key out)".into()))
            }
            DeValue::Array(a) => a.iter().map(|e| Ok((self.str(e, at, key)?, e))).collect(),
            _ => Err(self.wrong_type(v, at, key, "a string or a list of strings")),
        }
    }

    /// `v` as an integer, in any radix and with `_` separators.
    pub(super) fn int(&self, v: &Val, at: &str, key: &str) -> Result<i64, RequestsError> {
        match v.get_ref() {
            DeValue::Integer(i) => i64::from_str_radix(&i.as_str().replace('_', ""), i.radix())
                .map_err(|_| self.at(v, at, key, "not a 64-bit integer".into())),
            _ => Err(self.wrong_type(v, at, key, "an integer")),
        }
    }

    /// `weight`: a number above 0, whole or not.
    pub(super) fn weight(&self, v: &Val, at: &str) -> Result<f64, RequestsError> {
        let key = "weight";
        let what = "a number above 0 (80, or 0.8)";
        let w = match v.get_ref() {
            DeValue::Integer(_) => self.int(v, at, key)? as f64,
            DeValue::Float(f) => f
                .as_str()
                .replace('_', "")
                .parse::<f64>()
                .unwrap_or(f64::NAN),
            _ => return Err(self.wrong_type(v, at, key, what)),
        };
        if !w.is_finite() || w <= 0.0 {
            let text = &self.src.text[v.span()];
            return Err(self.at(v, at, key, format!("must be {what}, not {text}")));
        }
        Ok(w)
    }

    /// `v` as a size in bytes: an integer, or a string with units (`1KiB`).
    pub(super) fn size(&self, v: &Val, at: &str, key: &str) -> Result<u64, RequestsError> {
        match v.get_ref() {
            DeValue::Integer(_) => u64::try_from(self.int(v, at, key)?)
                .map_err(|_| self.at(v, at, key, "must be 0 or more bytes".into())),
            DeValue::String(s) => checks::size(s).map_err(|m| self.at(v, at, key, m)),
            _ => Err(self.wrong_type(v, at, key, "a size such as \"1KiB\" or a number of bytes")),
        }
    }

    /// `expect_status`: a status (`200`), a string list (`"2xx"`, `"200-299,404"`), or a list
    /// of either.
    pub(super) fn status(&self, v: &Val, at: &str) -> Result<Vec<(u16, u16)>, RequestsError> {
        let key = "expect_status";
        let what = "a status (200), a string such as \"2xx\" or \"200-299\", or a list of them";
        let one = |e: &Val| -> Result<Vec<(u16, u16)>, RequestsError> {
            match e.get_ref() {
                DeValue::Integer(_) => {
                    let n = self.int(e, at, key)?;
                    let s =
                        checks::status(&n.to_string(), what).map_err(|m| self.at(e, at, key, m))?;
                    Ok(vec![(s, s)])
                }
                DeValue::String(s) => checks::status_list(s).map_err(|m| self.at(e, at, key, m)),
                _ => Err(self.wrong_type(e, at, key, what)),
            }
        };
        match v.get_ref() {
            DeValue::Array(a) if a.is_empty() => Err(self.at(
                v,
                at,
                key,
                "an empty list allows no status (leave the key out to allow any)".into(),
            )),
            DeValue::Array(a) => {
                let mut all = Vec::new();
                for e in a.iter() {
                    all.extend(one(e)?);
                }
                Ok(all)
            }
            _ => one(v),
        }
    }
}
