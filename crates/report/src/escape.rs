//! Text made safe for the page: escaped for HTML, escaped for a `<script>` element, and the
//! template filled without ever reading a value as markup.

use serde::Serialize;

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape_html(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// JSON safe inside a `<script>` element: `<`, `>` and `&` become `\u003c`-style escapes, so
/// neither `</script>` nor `<!--` can end or change the element, and U+2028/U+2029 are escaped
/// for older JavaScript parsers. JSON.parse reads the escapes back to the same text.
pub fn script_json<T: Serialize>(v: &T) -> String {
    let text = serde_json::to_string(v).expect("the page data serializes");
    let mut o = String::with_capacity(text.len() + 64);
    for ch in text.chars() {
        match ch {
            '<' => o.push_str("\\u003c"),
            '>' => o.push_str("\\u003e"),
            '&' => o.push_str("\\u0026"),
            '\u{2028}' => o.push_str("\\u2028"),
            '\u{2029}' => o.push_str("\\u2029"),
            c => o.push(c),
        }
    }
    o
}

/// Replaces each `{{name}}` of `template` with its value, in one pass: values are never scanned
/// for placeholders, so data that happens to contain `{{js}}` stays text.
///
/// Panics on an unknown or unclosed placeholder: the template is compiled in, so that is a bug
/// every test catches.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + values.iter().map(|v| v.1.len()).sum::<usize>());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .expect("unclosed placeholder in the template");
        let name = &after[..end];
        let value = values
            .iter()
            .find(|(k, _)| *k == name)
            .unwrap_or_else(|| panic!("no value for placeholder {{{{{name}}}}}"));
        out.push_str(value.1);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// `s` as a Markdown code span, on one line: its text verbatim, since a code span shows
/// `&lt;` and `\|` as written (so Markdown escaping must not be applied inside one), fenced by more
/// backticks than `s` holds in a row.
pub(crate) fn code_span(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ");
    let (mut run, mut longest) = (0, 0);
    for ch in s.chars() {
        run = if ch == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_json_cannot_close_the_script_element() {
        let data = vec!["</script><script>alert(1)</script>", "<!--", "a\u{2028}b&c"];
        let s = script_json(&data);
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('&'));
        assert!(!s.contains('\u{2028}'));
        let back: Vec<String> = serde_json::from_str(&s).unwrap();
        assert_eq!(back, data, "the escapes read back to the same text");
    }

    #[test]
    fn escape_html_escapes_all_five() {
        assert_eq!(
            escape_html(r#"<a href="x" title='y'>&</a>"#),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
    }

    #[test]
    fn fill_does_not_expand_placeholders_inside_values() {
        let out = fill("<{{a}}|{{b}}>", &[("a", "{{b}}"), ("b", "x")]);
        assert_eq!(out, "<{{b}}|x>");
    }
}
