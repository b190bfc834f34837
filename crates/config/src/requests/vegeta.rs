//! vegeta's plain targets format (its `http` format): each target a line `METHOD URL`, then
//! `Name: value` header lines, then an optional `@path` line whose file is the body; blank
//! lines between targets, `#` lines ignored. Every target is a request of weight 1, unnamed,
//! and literal (a brace is a character: nothing is templated).
//!
//! As in vegeta, user information in a URL (`http://user:password@host/`) becomes an
//! `Authorization: Basic` header unless the target has one. Unlike vegeta, a `METHOD URL`
//! line right after a target's headers starts the next target (vegeta would read it as a
//! header); the blank line between targets may be left out anyway.

use base64::Engine as _;
use sha2::Sha256;

use super::{check_header_name, first_word, path_of_url, Read, RequestsError, Run, Source};
use volley_plan::workload::{Body, Entry, Order, Template};

/// Why the file is not vegeta targets.
pub(super) enum Failure {
    /// Before its first target: the file may be in the other format. `at` is where it failed.
    First {
        /// Byte offset in the file.
        at: usize,
        /// What vegeta's format expected there, starting with the line.
        message: String,
    },
    /// After its first target: a targets file with a mistake.
    Later(RequestsError),
}

/// Reads `src` as vegeta targets for `run`, hashing the body files into `hash`.
pub(super) fn read(src: &Source, run: Run, hash: &mut Sha256) -> Result<Read, Failure> {
    let lines = lines(src.text);
    let mut entries: Vec<Entry> = Vec::new();
    let mut i = 0;
    loop {
        while i < lines.len() && skipped(lines[i].1) {
            i += 1;
        }
        let Some(&(off, line)) = lines.get(i) else {
            break;
        };
        i += 1;
        let n = entries.len() + 1;
        let at = off + (line.len() - line.trim_start().len());
        let t = line.trim();
        let Some((method, url)) = target_line(t) else {
            let expected = format!(
                "expected a target `METHOD URL` (e.g. GET http://host:port/path), found `{}`",
                first_word(t)
            );
            return Err(if entries.is_empty() {
                let (lno, _) = src.line_col(at);
                Failure::First {
                    at,
                    message: format!("line {lno}: {expected}"),
                }
            } else {
                Failure::Later(src.err(at, None, format!("target {n}: {expected}")))
            });
        };
        let fail = |at: usize, m: String| -> Failure {
            let e = src.err(at, None, format!("target {n}: {m}"));
            Failure::Later(e)
        };
        let (url, basic) = without_user_info(url);
        let path = path_of_url(&url, run.target).map_err(|m| {
            fail(
                at,
                format!(
                    "{m} (vegeta's targets name the server in every URL: it must be the run's)"
                ),
            )
        })?;
        let mut headers: Vec<(String, Template)> = Vec::new();
        let mut body = Body::None;
        while let Some(&(off, line)) = lines.get(i) {
            let t = line.trim();
            let at = off + (line.len() - line.trim_start().len());
            if t.is_empty() {
                i += 1;
                break;
            }
            if t.starts_with('#') {
                i += 1;
                continue;
            }
            if target_line(t).is_some() {
                break;
            }
            i += 1;
            if let Some(file) = t.strip_prefix('@') {
                let bytes = src
                    .read(file, hash)
                    .map_err(|m| fail(at, format!("body @{file}: {m}")))?;
                body = Body::Bytes(bytes);
                break;
            }
            let header = t
                .split_once(':')
                .map(|(n, v)| (n.trim(), v.trim()))
                .filter(|(n, v)| !n.is_empty() && !v.is_empty());
            let Some((name, value)) = header else {
                return Err(fail(
                    at,
                    format!(
                        "`{}` is not a header `Name: value` (nor `@file`, a body)",
                        first_word(t)
                    ),
                ));
            };
            check_header_name(name).map_err(|m| fail(at, m))?;
            headers.push((name.to_string(), Template::literal(value)));
        }
        if let Some(credentials) = basic {
            if !headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
            {
                headers.push((
                    "Authorization".into(),
                    Template::literal(format!("Basic {credentials}")),
                ));
            }
        }
        entries.push(Entry {
            endpoint: None,
            method: method.to_string(),
            path: Template::literal(path),
            headers,
            body,
            weight: 1,
            checks: run.checks.clone(),
            step: Default::default(),
        });
    }
    if entries.is_empty() {
        let (lno, _) = src.line_col(src.text.len());
        return Err(Failure::First {
            at: src.text.len(),
            message: format!("line {lno}: no target `METHOD URL` in the file"),
        });
    }
    Ok(Read {
        entries,
        order: Order::Weighted,
        endpoints: Vec::new(),
        data: None,
        journey: Default::default(),
    })
}

/// The lines of `text` with the byte offset each starts at (without `\n` or `\r\n`).
fn lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut off = 0;
    for l in text.split_inclusive('\n') {
        out.push((off, l.trim_end_matches(['\n', '\r'])));
        off += l.len();
    }
    out
}

/// Blank and `#` lines, which come between targets.
fn skipped(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// `METHOD URL` (vegeta: the method is upper-case letters, then white space).
fn target_line(t: &str) -> Option<(&str, &str)> {
    let (method, rest) = t.split_once([' ', '\t'])?;
    let url = rest.trim();
    (!method.is_empty() && method.bytes().all(|b| b.is_ascii_uppercase()) && !url.is_empty())
        .then_some((method, url))
}

/// `url` without `user:password@`, and those credentials as HTTP Basic's base64 (the user
/// and password percent-decoded, as Go's client sends them).
fn without_user_info(url: &str) -> (String, Option<String>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_string(), None);
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let Some((user_info, host)) = authority.rsplit_once('@') else {
        return (url.to_string(), None);
    };
    let decoded = volley_model::units::percent_decode(user_info);
    let credentials = base64::engine::general_purpose::STANDARD.encode(decoded);
    (format!("{scheme}://{host}{tail}"), Some(credentials))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{at, read_in};
    use super::*;
    use volley_plan::workload::Workload;

    /// vegeta's README examples with goku:9090 made the tests' 127.0.0.1:8080, in `dir`.
    fn targets(dir: &std::path::Path, text: &str) -> Workload {
        let text = text.replace("goku:9090", "127.0.0.1:8080");
        read_in(dir, "targets.txt", &text).unwrap()
    }

    fn head(e: &Entry) -> (String, Vec<u8>, Vec<(String, String)>) {
        (
            e.method.clone(),
            e.path.literal_bytes().unwrap(),
            e.headers
                .iter()
                .map(|(n, v)| {
                    (
                        n.clone(),
                        String::from_utf8(v.literal_bytes().unwrap()).unwrap(),
                    )
                })
                .collect(),
        )
    }

    #[test]
    fn simple_targets() {
        let w = targets(
            std::path::Path::new(""),
            "GET http://goku:9090/path/to/dragon?item=ball\nGET http://user:password@goku:9090/path/to\nHEAD http://goku:9090/path/to/success\n",
        );
        assert_eq!(w.order, Order::Weighted);
        assert_eq!(w.cycle.len(), 3);
        assert!(w.data.is_none());
        // Unnamed, as vegeta's targets are: named by method and path, query included.
        assert_eq!(
            w.endpoints,
            [
                "GET /path/to/dragon?item=ball",
                "GET /path/to",
                "HEAD /path/to/success"
            ]
        );
        assert_eq!(w.other, None);
        let e: Vec<_> = w.entries.iter().map(head).collect();
        assert_eq!(
            e[0],
            ("GET".into(), b"/path/to/dragon?item=ball".to_vec(), vec![])
        );
        assert_eq!(
            e[1],
            (
                "GET".into(),
                b"/path/to".to_vec(),
                vec![("Authorization".into(), "Basic dXNlcjpwYXNzd29yZA==".into())]
            )
        );
        assert_eq!(e[2].0, "HEAD");
        assert!(w
            .entries
            .iter()
            .all(|e| e.weight == 1 && e.body == Body::None));
        let named: Vec<_> = w.entries.iter().map(|e| e.endpoint).collect();
        assert_eq!(named, [Some(0), Some(1), Some(2)]);
    }

    #[test]
    fn targets_are_named_by_method_and_path() {
        let w = targets(
            std::path::Path::new(""),
            "GET http://goku:9090/a\nGET http://goku:9090/b\nGET http://goku:9090/c\nGET http://goku:9090/a\n",
        );
        assert_eq!(w.endpoints, ["GET /a", "GET /b", "GET /c"]);
        let named: Vec<_> = w.entries.iter().map(|e| e.endpoint.unwrap()).collect();
        assert_eq!(named, [0, 1, 2, 0]);
    }

    #[test]
    fn targets_with_custom_headers() {
        let w = targets(
            std::path::Path::new(""),
            "GET http://user:password@goku:9090/path/to\nX-Account-ID: 8675309\n\nDELETE http://goku:9090/path/to/remove\nConfirmation-Token: 90215\nAuthorization: Token DEADBEEF\n",
        );
        let e: Vec<_> = w.entries.iter().map(head).collect();
        assert_eq!(
            e[0].2,
            [
                ("X-Account-ID".to_string(), "8675309".to_string()),
                ("Authorization".into(), "Basic dXNlcjpwYXNzd29yZA==".into())
            ]
        );
        assert_eq!(e[1].0, "DELETE");
        assert_eq!(
            e[1].2,
            [
                ("Confirmation-Token".to_string(), "90215".to_string()),
                ("Authorization".into(), "Token DEADBEEF".into())
            ]
        );
    }

    #[test]
    fn targets_with_bodies_headers_and_comments() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("path/to")).unwrap();
        std::fs::write(dir.path().join("path/to/newthing.json"), "{\"new\": 1}").unwrap();
        std::fs::write(dir.path().join("path/to/thing-71988591.json"), "{\"n\": 7}").unwrap();
        // vegeta's README names /path/to/…; relative paths start at the targets file.
        let w = targets(
            dir.path(),
            "POST http://goku:9090/things\n@path/to/newthing.json\n\nPATCH http://goku:9090/thing/71988591\n@path/to/thing-71988591.json\n",
        );
        assert_eq!(
            w.entries[0].body,
            Body::Bytes(b"{\"new\": 1}".to_vec().into())
        );
        assert_eq!(w.entries[1].method, "PATCH");
        assert_eq!(
            w.entries[1].body,
            Body::Bytes(b"{\"n\": 7}".to_vec().into())
        );
        let w = targets(
            dir.path(),
            "POST http://goku:9090/things\nX-Account-ID: 99\n@path/to/newthing.json\n",
        );
        assert_eq!(
            head(&w.entries[0]).2,
            [("X-Account-ID".to_string(), "99".to_string())]
        );
        assert_eq!(
            w.entries[0].body,
            Body::Bytes(b"{\"new\": 1}".to_vec().into())
        );
        let absolute = format!(
            "POST http://goku:9090/things\n@{}\n",
            dir.path().join("path/to/newthing.json").display()
        );
        let w = targets(std::path::Path::new("elsewhere"), &absolute);
        assert_eq!(
            w.entries[0].body,
            Body::Bytes(b"{\"new\": 1}".to_vec().into())
        );
        let w = targets(
            dir.path(),
            "# get a dragon ball\nGET http://goku:9090/path/to/dragon?item=ball\n# specify a test account\nX-Account-ID: 99\n",
        );
        assert_eq!(w.entries.len(), 1);
        assert_eq!(
            head(&w.entries[0]).2,
            [("X-Account-ID".to_string(), "99".to_string())]
        );
        // Nothing is templated, and the body file is in the hash.
        let w2 = targets(dir.path(), "GET http://goku:9090/{seq}\n");
        assert_eq!(w2.entries[0].path.literal_bytes().unwrap(), b"/{seq}");
    }

    #[test]
    fn mistakes_after_the_first_target_are_vegetas() {
        let dir = std::path::Path::new("");
        let (line, col, _, msg) =
            at(read_in(dir, "t.txt", "GET http://127.0.0.1:8080/\nX-Bad\n").unwrap_err());
        assert_eq!((line, col), (2, 1));
        assert_eq!(
            msg,
            "target 1: `X-Bad` is not a header `Name: value` (nor `@file`, a body)"
        );
        let (line, _, _, msg) = at(read_in(
            dir,
            "t.txt",
            "GET http://127.0.0.1:8080/\n\nget http://127.0.0.1:8080/\n",
        )
        .unwrap_err());
        assert_eq!(line, 3);
        assert!(
            msg.starts_with("target 2: expected a target `METHOD URL`"),
            "{msg}"
        );
        let (line, _, _, msg) = at(read_in(
            dir,
            "t.txt",
            "GET http://127.0.0.1:8080/\nPOST http://other:8080/x\n",
        )
        .unwrap_err());
        assert_eq!(line, 2);
        assert!(
            msg.contains(
                "target 2: `http://other:8080/x` is not on the run's http://127.0.0.1:8080"
            ),
            "{msg}"
        );
        let (line, col, _, msg) = at(read_in(
            dir,
            "t.txt",
            "GET http://127.0.0.1:8080/\n  @/no/such.json\n",
        )
        .unwrap_err());
        assert_eq!((line, col), (2, 3));
        assert!(
            msg.starts_with("target 1: body @/no/such.json: /no/such.json: No such file"),
            "{msg}"
        );
    }

    #[test]
    fn a_file_of_neither_format_says_what_each_expected() {
        let dir = std::path::Path::new("");
        let (line, col, _, msg) =
            at(read_in(dir, "mix.txt", "# requests\n[[request]\npath = \"/\"\n").unwrap_err());
        assert_eq!((line, col), (2, 1));
        assert!(msg.starts_with("neither a TOML requests file nor vegeta targets: as vegeta targets, line 2: expected a target `METHOD URL`"), "{msg}");
        assert!(msg.contains("; as TOML, line 2 column "), "{msg}");
        let (_, _, _, msg) =
            at(read_in(dir, "mix.txt", "[[requests]]\npath = \"/\"\n").unwrap_err());
        assert!(
            msg.contains("it parses as TOML but has no [[request]]"),
            "{msg}"
        );
        let (line, _, _, msg) = at(read_in(dir, "mix.txt", "# only\n").unwrap_err());
        assert_eq!(line, 2);
        assert!(msg.contains("no target `METHOD URL` in the file"), "{msg}");
        // TOML with a `request` array is read as TOML whatever the name.
        let w = read_in(dir, "mix.conf", "[[request]]\npath = \"/x\"\nweight = 2\n").unwrap();
        assert_eq!(w.entries[0].weight, 1);
        let (_, _, key, msg) =
            at(read_in(dir, "mix.conf", "[[request]]\npath = \"x\"\n").unwrap_err());
        assert_eq!(key.as_deref(), Some("path"), "{msg}");
        // A *.toml file is TOML, and its syntax errors are TOML's.
        let (line, _, _, msg) =
            at(read_in(dir, "mix.toml", "GET http://127.0.0.1:8080/\n").unwrap_err());
        assert_eq!(line, 1);
        assert!(!msg.contains("vegeta"), "{msg}");
    }

    #[test]
    fn user_info_is_taken_out_of_urls() {
        assert_eq!(
            without_user_info("http://a%40b:p@h:1/x"),
            (
                "http://h:1/x".into(),
                Some(base64::engine::general_purpose::STANDARD.encode("a@b:p"))
            )
        );
        assert_eq!(
            without_user_info("http://h/x@y"),
            ("http://h/x@y".into(), None)
        );
    }
}
