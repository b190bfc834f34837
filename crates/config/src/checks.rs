//! Response checks: the `--expect-*` flags, and the parsers a requests file's `expect_*` keys
//! share with them, turned into [`Checks`] (docs/contract.md, "Workloads"). What a check means
//! for a response (a failure of its own kind) is the engine's business; here each one is only
//! read and refused when it cannot be used.

use super::{ConfigError, Flag, RunFlags};
use volley_plan::workload::{Checks, JsonCheck};

/// The checks of the `--expect-*` flags (none given: no check).
pub fn from_flags(a: &RunFlags) -> Result<Checks, ConfigError> {
    let status = match &a.expect_status {
        Some(s) => status_list(s).map_err(|m| ConfigError::flag(Flag::ExpectStatus, m))?,
        None => Vec::new(),
    };
    let body_contains = a
        .expect_body_contains
        .iter()
        .map(|t| body_text(t).map_err(|m| ConfigError::flag(Flag::ExpectBodyContains, m)))
        .collect::<Result<_, _>>()?;
    let body_regex = match &a.expect_body_regex {
        Some(r) => Some(regex(r).map_err(|m| ConfigError::flag(Flag::ExpectBodyRegex, m))?),
        None => None,
    };
    let headers = a
        .expect_header
        .iter()
        .map(|h| header(h).map_err(|m| ConfigError::flag(Flag::ExpectHeader, m)))
        .collect::<Result<_, _>>()?;
    let json = a
        .expect_json
        .iter()
        .map(|j| json(j).map_err(|m| ConfigError::flag(Flag::ExpectJson, m)))
        .collect::<Result<_, _>>()?;
    Ok(Checks {
        status,
        body_contains,
        body_regex,
        headers,
        size: a.expect_size,
        json,
        ..Checks::default()
    })
}

/// A JSON check: `POINTER` (the field must be there) or `POINTER=VALUE` (and equal VALUE: a
/// string's text, or another value's JSON); the pointer may be written as a `$.a.b` path.
pub(crate) fn json(text: &str) -> Result<JsonCheck, String> {
    let (field, equals) = match text.split_once('=') {
        Some((f, v)) => (f.trim(), Some(v.to_string())),
        None => (text.trim(), None),
    };
    let pointer = if field.starts_with('/') {
        field.to_string()
    } else if field.is_empty() {
        return Err(format!(
            "`{text}`: no field (expected a JSON pointer such as /data/id, then =VALUE or not)"
        ));
    } else {
        volley_plan::journey::json_path_to_pointer(field)?
    };
    Ok(JsonCheck::new(pointer, equals))
}

/// A status list: `200`, `200-299`, `2xx`, or several of them separated by commas
/// (`200,204,3xx`), as inclusive ranges in the order given.
pub(crate) fn status_list(text: &str) -> Result<Vec<(u16, u16)>, String> {
    if text.trim().is_empty() {
        return Err("empty: expected a status such as 200, 200-299 or 2xx".into());
    }
    text.split(',')
        .map(|item| status_range(item.trim()))
        .collect()
}

/// One item of a status list.
fn status_range(item: &str) -> Result<(u16, u16), String> {
    let expected = "expected a status (200), a range (200-299) or a class (2xx)";
    if item.is_empty() {
        return Err(format!("an empty item in the list ({expected})"));
    }
    if let Some(class) = item.strip_suffix("xx").or_else(|| item.strip_suffix("XX")) {
        return match class {
            "1" | "2" | "3" | "4" | "5" => {
                let c: u16 = class.parse().expect("one digit");
                Ok((c * 100, c * 100 + 99))
            }
            _ => Err(format!(
                "`{item}` is not a status class (1xx to 5xx; {expected})"
            )),
        };
    }
    match item.split_once('-') {
        Some((lo, hi)) => {
            let (lo, hi) = (status(lo.trim(), expected)?, status(hi.trim(), expected)?);
            if lo > hi {
                return Err(format!("`{item}`: {lo} is above {hi}"));
            }
            Ok((lo, hi))
        }
        None => {
            let s = status(item, expected)?;
            Ok((s, s))
        }
    }
}

/// One status code, 100 to 599.
pub fn status(text: &str, expected: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(s) if (100..=599).contains(&s) => Ok(s),
        Ok(_) => Err(format!("`{text}` is not a status (100 to 599)")),
        Err(_) => Err(format!("`{text}` is not a status ({expected})")),
    }
}

/// Text a body must contain: not empty (every body contains the empty text).
pub(crate) fn body_text(text: &str) -> Result<Vec<u8>, String> {
    if text.is_empty() {
        return Err("empty text: every body contains it".into());
    }
    Ok(text.as_bytes().to_vec())
}

/// A body pattern, in the syntax of Rust's `regex` crate (over bytes: no UTF-8 needed).
pub(crate) fn regex(text: &str) -> Result<regex::bytes::Regex, String> {
    regex::bytes::Regex::new(text).map_err(|e| format!("`{text}` is not a regex: {e}"))
}

/// `NAME` (the header is there) or `NAME:VALUE` (there with this value, after trimming); the
/// name in lower case.
pub(crate) fn header(text: &str) -> Result<(String, Option<String>), String> {
    let (name, value) = match text.split_once(':') {
        Some((n, v)) => (n.trim(), Some(v.trim())),
        None => (text.trim(), None),
    };
    if name.is_empty() || !name.bytes().all(super::request::is_token_byte) {
        return Err(format!(
            "`{text}`: expected a header name, or NAME:VALUE (e.g. content-type:application/json)"
        ));
    }
    if value == Some("") {
        return Err(format!(
            "`{text}`: no value after the `:` (the name alone checks that the header is there)"
        ));
    }
    Ok((name.to_ascii_lowercase(), value.map(str::to_string)))
}

/// A body length: a size with units (`1KiB`, `512`).
pub(crate) fn size(text: &str) -> Result<u64, String> {
    volley_model::units::parse_size(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks(args: &[&str]) -> Result<Checks, ConfigError> {
        let mut argv = vec!["http://127.0.0.1:1/"];
        argv.extend_from_slice(args);
        from_flags(&crate::args_from::<RunFlags, _, _>(argv).unwrap())
    }

    #[test]
    fn status_lists_take_codes_ranges_and_classes() {
        assert_eq!(status_list("200").unwrap(), [(200, 200)]);
        assert_eq!(status_list("200-299").unwrap(), [(200, 299)]);
        assert_eq!(status_list("2xx").unwrap(), [(200, 299)]);
        assert_eq!(
            status_list("200, 204,3xx").unwrap(),
            [(200, 200), (204, 204), (300, 399)]
        );
        for (bad, says) in [
            ("", "empty"),
            ("200,", "an empty item"),
            ("2000", "not a status (100 to 599)"),
            ("ok", "`ok` is not a status"),
            ("299-200", "299 is above 200"),
            ("6xx", "not a status class"),
            ("20x", "`20x` is not a status"),
        ] {
            let m = status_list(bad).unwrap_err();
            assert!(m.contains(says), "{bad}: {m}");
        }
    }

    #[test]
    fn headers_are_lower_case_names_with_trimmed_values() {
        assert_eq!(
            header("Content-Type").unwrap(),
            ("content-type".into(), None)
        );
        assert_eq!(
            header("Content-Type: application/json ").unwrap(),
            ("content-type".into(), Some("application/json".into()))
        );
        assert!(header("bad name: x").unwrap_err().contains("header name"));
        assert!(header("x-a:").unwrap_err().contains("no value"));
    }

    #[test]
    fn flags_become_checks() {
        let c = checks(&[
            "--expect-status",
            "2xx,404",
            "--expect-body-contains",
            "ok",
            "--expect-body-contains",
            "id",
            "--expect-body-regex",
            "^\\{",
            "--expect-header",
            "X-Id",
            "--expect-size",
            "1KiB",
        ])
        .unwrap();
        assert_eq!(c.status, [(200, 299), (404, 404)]);
        assert_eq!(c.body_contains, [b"ok".to_vec(), b"id".to_vec()]);
        assert!(c.body_regex.unwrap().is_match(b"{\"a\":1}"));
        assert_eq!(c.headers, [("x-id".to_string(), None)]);
        assert_eq!(c.size, Some(1024));
        assert!(checks(&[]).unwrap().is_empty());
    }

    #[test]
    fn bad_flags_name_themselves() {
        let e = checks(&["--expect-body-regex", "(unclosed"]).unwrap_err();
        let m = e.to_string();
        assert!(
            m.starts_with("--expect-body-regex: `(unclosed` is not a regex"),
            "{m}"
        );
        assert!(m.contains("unclosed group"), "{m}");
        let e = checks(&["--expect-status", "ok"]).unwrap_err();
        assert_eq!(e.flags(), [Flag::ExpectStatus]);
        let e = checks(&["--expect-header", ": x"]).unwrap_err();
        assert_eq!(e.flags(), [Flag::ExpectHeader]);
        let e = checks(&["--expect-body-contains", ""]).unwrap_err();
        assert!(e.to_string().contains("every body contains it"), "{e}");
    }
}
