//! Templates: the text of a `path`, a header value or an inline `body` parsed once into a
//! [`Template`] of literal bytes and placeholders. `{seq}`, `{rand:LO..HI}`, `{uuid}`,
//! `{row.COLUMN}`, `{conn}` and `{user}` are the placeholders; `{{` and `}}` are literal braces,
//! and any other brace is an error (so a JSON body is written `{{"id": {seq}}}`: a single `{`
//! that silently stayed literal could not be told from a mistyped placeholder).
//!
//! `{var.NAME}` is a value the user captured from an earlier response (a journey). Nothing is
//! computed: no arithmetic, no conditional, no loop. A `{row.X}` or `{var.X}` value is copied
//! as it is (no percent-encoding).

use volley_plan::workload::{Part, Template};

/// The columns `{row.COLUMN}` may name: the data file's, when the requests file has one.
#[derive(Debug, Clone, Copy)]
pub(super) struct Columns<'a> {
    /// The data file as the requests file names it (for messages).
    pub file: &'a str,
    /// Its column names, in file order.
    pub names: &'a [String],
}

/// A template that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TemplateError {
    /// Byte offset in the text where the problem starts.
    pub offset: usize,
    /// The placeholder (or brace) as written, to find it in the file.
    pub written: String,
    /// What is wrong.
    pub message: String,
}

/// The placeholders, for messages.
pub(super) const PLACEHOLDERS: &str =
    "{seq}, {rand:LO..HI}, {uuid}, {row.COLUMN}, {conn}, {user}, {var.NAME}";

/// Parses `text`; `columns` are the data file's (`None`: the requests file has no `[data]`),
/// `vars` the variables the file's requests capture.
pub(super) fn parse(
    text: &str,
    columns: Option<Columns>,
    vars: &[String],
) -> Result<Template, TemplateError> {
    let b = text.as_bytes();
    let mut parts = Vec::new();
    let mut lit: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'{', Some(b'{')) => {
                lit.push(b'{');
                i += 2;
            }
            (b'}', Some(b'}')) => {
                lit.push(b'}');
                i += 2;
            }
            (b'}', _) => {
                return Err(TemplateError {
                    offset: i,
                    written: "}".into(),
                    message: "a single `}` (a literal `}` is written `}}`)".into(),
                })
            }
            (b'{', _) => {
                let (part, end) = placeholder(text, i, columns, vars)?;
                if !lit.is_empty() {
                    parts.push(Part::Lit(std::mem::take(&mut lit)));
                }
                parts.push(part);
                i = end;
            }
            (c, _) => {
                lit.push(c);
                i += 1;
            }
        }
    }
    if !lit.is_empty() {
        parts.push(Part::Lit(lit));
    }
    Ok(Template { parts })
}

/// The placeholder opening at byte `start` of `text`, and the offset just past its `}`.
fn placeholder(
    text: &str,
    start: usize,
    columns: Option<Columns>,
    vars: &[String],
) -> Result<(Part, usize), TemplateError> {
    let rest = &text[start + 1..];
    let close = rest.find('}');
    let open = rest.find('{');
    if let (Some(o), Some(c)) = (open, close) {
        if o < c {
            let shown = &text[start..start + 1 + o + 1];
            return Err(TemplateError {
                offset: start,
                written: shown.to_string(),
                message: format!(
                    "`{shown}`: a `{{` that starts no placeholder (a placeholder is {PLACEHOLDERS}; a literal `{{` is written `{{{{`, so a JSON body reads `{{{{\"id\": {{seq}}}}}}`)"
                ),
            });
        }
    }
    let Some(close) = close else {
        // Show the start of what never closes, not a whole body.
        let shown: String = text[start..].chars().take(24).collect();
        let more = if text[start..].chars().count() > 24 {
            "…"
        } else {
            ""
        };
        return Err(TemplateError {
            offset: start,
            written: shown.clone(),
            message: format!(
                "`{shown}{more}` never closes (a placeholder is {PLACEHOLDERS}; a literal `{{` is written `{{{{`)"
            ),
        });
    };
    let name = &rest[..close];
    let written = format!("{{{name}}}");
    let end = start + 1 + close + 1;
    let err = |message: String| TemplateError {
        offset: start,
        written: written.clone(),
        message,
    };
    let part = match name {
        "seq" => Part::Seq,
        "uuid" => Part::Uuid,
        "conn" => Part::Conn,
        "user" => Part::User,
        _ => {
            if let Some(range) = name.strip_prefix("rand:") {
                rand(range).map_err(|m| err(format!("`{written}`: {m}")))?
            } else if let Some(column) = name.strip_prefix("row.") {
                row(column, columns).map_err(|m| err(format!("`{written}`: {m}")))?
            } else if let Some(var) = name.strip_prefix("var.") {
                variable(var, vars).map_err(|m| err(format!("`{written}`: {m}")))?
            } else {
                return Err(err(format!(
                    "unknown placeholder `{written}` (expected {PLACEHOLDERS}; a literal `{{` is written `{{{{`)"
                )));
            }
        }
    };
    Ok((part, end))
}

/// `LO..HI` of `{rand:LO..HI}`: whole numbers, LO at most HI.
fn rand(range: &str) -> Result<Part, String> {
    let shape = "expected {rand:LO..HI} with whole numbers, e.g. {rand:1..10000}";
    let (lo, hi) = range
        .split_once("..")
        .ok_or_else(|| format!("no `..` ({shape})"))?;
    let number = |s: &str| {
        s.parse::<u64>()
            .map_err(|_| format!("`{s}` is not a whole number ({shape})"))
    };
    let (lo, hi) = (number(lo)?, number(hi)?);
    if lo > hi {
        return Err(format!("LO {lo} is more than HI {hi}"));
    }
    if hi - lo == u64::MAX {
        return Err("the range is wider than 2^64 - 1 values".into());
    }
    Ok(Part::Rand { lo, hi })
}

/// `COLUMN` of `{row.COLUMN}`: a column of the data file.
fn row(column: &str, columns: Option<Columns>) -> Result<Part, String> {
    let Some(c) = columns else {
        return Err(
            "there is no data file to take rows from (add [data] file = \"rows.csv\")".into(),
        );
    };
    match c.names.iter().position(|n| n == column) {
        Some(i) => Ok(Part::Row(i)),
        None => Err(format!(
            "{} has no column `{column}` (its columns: {})",
            c.file,
            c.names.join(", ")
        )),
    }
}

/// `NAME` of `{var.NAME}`: a variable a request of the file captures.
fn variable(name: &str, vars: &[String]) -> Result<Part, String> {
    match vars.iter().position(|v| v == name) {
        Some(k) => Ok(Part::Var(k as u16)),
        None if vars.is_empty() => Err(format!(
            "unknown variable `{name}`: no request captures one (add `capture = {{ {name} = {{ json = \"/…\" }} }}` to the request whose response holds it)"
        )),
        None => Err(format!(
            "unknown variable `{name}`: no request captures it (the file captures: {})",
            vars.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Part {
        Part::Lit(s.as_bytes().to_vec())
    }

    fn cols() -> Vec<String> {
        vec!["id".into(), "email".into()]
    }

    fn parse_with_data(text: &str) -> Result<Template, TemplateError> {
        let names = cols();
        parse(
            text,
            Some(Columns {
                file: "users.csv",
                names: &names,
            }),
            &[],
        )
    }

    #[test]
    fn placeholders_and_literal_braces() {
        let t = parse_with_data("/items/{rand:1..10000}?id={row.email}&s={seq}").unwrap();
        assert_eq!(
            t.parts,
            [
                lit("/items/"),
                Part::Rand { lo: 1, hi: 10000 },
                lit("?id="),
                Part::Row(1),
                lit("&s="),
                Part::Seq
            ]
        );
        let t = parse(
            "{{\"id\": {seq}, \"u\": \"{uuid}\", \"c\": {conn}{user}}}",
            None,
            &[],
        )
        .unwrap();
        assert_eq!(
            t.parts,
            [
                lit("{\"id\": "),
                Part::Seq,
                lit(", \"u\": \""),
                Part::Uuid,
                lit("\", \"c\": "),
                Part::Conn,
                Part::User,
                lit("}")
            ]
        );
        assert_eq!(parse("", None, &[]).unwrap().parts, []);
        assert!(parse("/plain", None, &[]).unwrap().is_literal());
        assert_eq!(
            parse("{rand:7..7}", None, &[]).unwrap().parts,
            [Part::Rand { lo: 7, hi: 7 }]
        );
    }

    #[test]
    fn errors_say_where_and_what() {
        let e = parse("/a/{seq", None, &[]).unwrap_err();
        assert_eq!((e.offset, e.written.as_str()), (3, "{seq"));
        assert!(e.message.contains("`{seq` never closes"), "{}", e.message);
        let e = parse("{\"id\": {seq}}", None, &[]).unwrap_err();
        assert_eq!((e.offset, e.written.as_str()), (0, "{\"id\": {"));
        assert!(e.message.contains("starts no placeholder"), "{}", e.message);
        assert!(
            e.message.contains(
                "a literal `{` is written `{{`, so a JSON body reads `{{\"id\": {seq}}}`"
            ),
            "{}",
            e.message
        );
        let e = parse("/x/{sequence}", None, &[]).unwrap_err();
        assert_eq!((e.offset, e.written.as_str()), (3, "{sequence}"));
        assert!(e
            .message
            .starts_with("unknown placeholder `{sequence}` (expected {seq}"));
        let e = parse("/x}", None, &[]).unwrap_err();
        assert_eq!((e.offset, e.written.as_str()), (2, "}"));
        assert!(e.message.contains("written `}}`"));
        let e = parse("{rand:10..1}", None, &[]).unwrap_err();
        assert_eq!(e.message, "`{rand:10..1}`: LO 10 is more than HI 1");
        let e = parse("{rand:a..5}", None, &[]).unwrap_err();
        assert!(
            e.message.contains("`a` is not a whole number"),
            "{}",
            e.message
        );
        let e = parse("{rand:5}", None, &[]).unwrap_err();
        assert!(e.message.contains("no `..`"), "{}", e.message);
        let e = parse("{rand:0..18446744073709551615}", None, &[]).unwrap_err();
        assert!(e.message.contains("wider"), "{}", e.message);
        let e = parse("{row.id}", None, &[]).unwrap_err();
        assert!(e.message.contains("no data file"), "{}", e.message);
        let vars = ["token".to_string()];
        let t = parse("Bearer {var.token}", None, &vars).unwrap();
        assert_eq!(t.parts, [lit("Bearer "), Part::Var(0)]);
        let e = parse("{var.tokn}", None, &vars).unwrap_err();
        assert_eq!(
            e.message,
            "`{var.tokn}`: unknown variable `tokn`: no request captures it (the file captures: token)"
        );
        let e = parse("{var.t}", None, &[]).unwrap_err();
        assert!(
            e.message.contains("no request captures one"),
            "{}",
            e.message
        );
        let e = parse_with_data("/u/{row.name}").unwrap_err();
        assert_eq!(
            e.message,
            "`{row.name}`: users.csv has no column `name` (its columns: id, email)"
        );
    }
}
