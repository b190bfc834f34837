//! volley's TOML requests file: an optional `[data]` table (the CSV of `{row.COLUMN}`) and one
//! `[[request]]` table per request, each with its method, `path` (or `url`), headers, body,
//! `weight` (or `sequence`), `name` and `expect_*` checks. Read from the spanned TOML tree, so
//! every error names the line, column and key of the value at fault.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;

use sha2::Sha256;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::data;
use super::template::{self, Columns};
use super::weights::{self, WeightError, MAX_CYCLE};
use super::{
    bad_in_header, bad_in_path, bad_literal, check_header_name, default_method, first_word,
    path_of_url, Read, RequestsError, Run, Source,
};
use crate::{checks, generated_body, MAX_BODY_BYTES};
use volley_plan::workload::{Body, Checks, Data, Entry, Order, RowOrder, Template, MAX_ENDPOINTS};

mod grpc;
mod journey;
mod reader;
mod request;
mod ws;

use reader::{a_type, Reader};
use request::{Names, Request, Requests};

/// A TOML value with the byte range it came from.
pub(super) type Val<'a> = Spanned<DeValue<'a>>;

/// Keys of the file itself.
const TOP_KEYS: &[&str] = &["cookies", "data", "request"];

/// Keys of `[data]`.
const DATA_KEYS: &[&str] = &["file", "order"];

/// Keys of a `[[request]]`.
const REQUEST_KEYS: &[&str] = &[
    "name",
    "method",
    "path",
    "url",
    "headers",
    "body",
    "body_file",
    "body_size",
    "weight",
    "sequence",
    "expect_status",
    "expect_body_contains",
    "expect_body_regex",
    "expect_header",
    "expect_size",
    "expect_json",
    "capture",
    "once",
    "think",
    "grpc",
];

/// Keys that each give a request its body; at most one of them.
const BODY_KEYS: &[&str] = &["body", "body_file", "body_size"];

/// Reads the TOML document `doc` of `src` for `run`, hashing the files it names into `hash`.
pub(super) fn read(
    src: &Source,
    doc: &DeTable,
    run: Run,
    hash: &mut Sha256,
) -> Result<Read, RequestsError> {
    let r = Reader { src };
    for (k, _) in doc.iter() {
        if !TOP_KEYS.contains(&k.get_ref().as_ref()) {
            return Err(src.err(
                k.span().start,
                Some(k.get_ref()),
                format!(
                    "unknown top-level key `{}` (expected `cookies`, [data] and [[request]] tables)",
                    k.get_ref()
                ),
            ));
        }
    }
    let data = match doc.get("data") {
        Some(v) => Some(read_data(&r, v, hash)?),
        None => None,
    };
    let cookies = match doc.get("cookies") {
        Some(v) => match v.get_ref() {
            DeValue::Boolean(b) => Some(*b),
            _ => return Err(r.wrong_type(v, "cookies", "cookies", "true or false")),
        },
        None => None,
    };
    let tables = request_tables(&r, doc.get("request"))?;
    let vars = journey::variables(&r, &tables)?;
    let mut cx = Requests {
        r: &r,
        run,
        data: data.as_ref().map(|(d, file)| (d.as_ref(), file.as_str())),
        names: Names::default(),
        rows_checked: HashSet::new(),
        bodies: HashMap::new(),
        vars: vars.clone(),
    };
    let mut read = Vec::with_capacity(tables.len());
    for (i, tv) in tables.iter().enumerate() {
        read.push(cx.request(i, tv, hash)?);
    }
    let order = order(&r, &mut read)?;
    let journey = journey::journey(&r, &mut read, vars, cookies)?;
    Ok(Read {
        entries: read.into_iter().map(|q| q.entry).collect(),
        order,
        endpoints: cx.names.list,
        data: data.map(|(d, _)| d),
        journey,
    })
}

/// The tables of `[[request]]`: at least one.
fn request_tables<'a>(
    r: &Reader,
    v: Option<&'a Val<'a>>,
) -> Result<Vec<&'a Val<'a>>, RequestsError> {
    let none = "no [[request]]: a requests file has at least one";
    let Some(v) = v else {
        return Err(r.src.err(r.src.text.len(), Some("request"), none.into()));
    };
    match v.get_ref() {
        DeValue::Array(a) if a.is_empty() => {
            Err(r.src.err(v.span().start, Some("request"), none.into()))
        }
        DeValue::Array(a) => Ok(a.iter().collect()),
        other => Err(r.src.err(
            v.span().start,
            Some("request"),
            format!(
                "`request` must be an array of tables ([[request]]), not {}",
                a_type(other.type_str())
            ),
        )),
    }
}

/// `[data]`: its rows, and its file as written (for messages).
fn read_data(r: &Reader, v: &Val, hash: &mut Sha256) -> Result<(Arc<Data>, String), RequestsError> {
    let at = "[data]";
    let t = r.table(v, at, "data")?;
    r.known(t, DATA_KEYS, at)?;
    let Some(fv) = t.get("file") else {
        return Err(r.src.err(
            v.span().start,
            Some("file"),
            format!("{at}: missing `file` (the CSV whose columns {{row.COLUMN}} reads)"),
        ));
    };
    let file = r.str(fv, at, "file")?;
    let order = match t.get("order") {
        None => RowOrder::Sequential,
        Some(ov) => match r.str(ov, at, "order")? {
            "sequential" => RowOrder::Sequential,
            "random" => RowOrder::Random,
            other => {
                return Err(r.src.err(
                    ov.span().start,
                    Some("order"),
                    format!("{at}: order: `{other}` is not \"sequential\" or \"random\""),
                ))
            }
        },
    };
    let bad = |m: String| {
        r.src
            .err(fv.span().start, Some("file"), format!("{at}: file: {m}"))
    };
    let bytes = r.src.read(file, hash).map_err(bad)?;
    let data = data::parse(&bytes, file, order).map_err(bad)?;
    Ok((Arc::new(data), file.to_string()))
}

/// The order of the file: a sequence when the requests have `sequence` (every one, each
/// distinct; the entries sorted by it), else a mix by weight (whole weights set).
fn order(r: &Reader, read: &mut [Request]) -> Result<Order, RequestsError> {
    let sequenced = read[0].sequence.is_some();
    for (i, q) in read.iter().enumerate().skip(1) {
        match (&q.sequence, sequenced) {
            (None, true) => {
                return Err(r.src.err(
                    q.table.start,
                    Some("sequence"),
                    format!("[[request]] {}: missing `sequence`: [[request]] 1 has one, so the file is a sequence and every request needs its place in it", i + 1),
                ))
            }
            (Some((_, span)), false) => {
                return Err(r.src.err(
                    span.start,
                    Some("sequence"),
                    format!("[[request]] {}: sequence: [[request]] 1 has none: a file is a sequence (every request has `sequence`) or a mix by weight (none has)", i + 1),
                ))
            }
            _ => {}
        }
    }
    if sequenced {
        let mut seen: HashMap<i64, usize> = HashMap::new();
        for (i, q) in read.iter().enumerate() {
            let (s, span) = q.sequence.clone().expect("checked above");
            if let Some(first) = seen.insert(s, i) {
                return Err(r.src.err(
                    span.start,
                    Some("sequence"),
                    format!(
                        "[[request]] {}: sequence: {s} is also [[request]] {}'s (each place in the sequence is one request's)",
                        i + 1,
                        first + 1
                    ),
                ));
            }
        }
        read.sort_by_key(|q| q.sequence.as_ref().map(|s| s.0));
        return Ok(Order::Sequence);
    }
    // Once steps run before the mix, not in it.
    let in_mix: Vec<usize> = (0..read.len())
        .filter(|&k| !read[k].entry.step.once)
        .collect();
    if in_mix.is_empty() {
        return Ok(Order::Weighted); // refused with its reason by the journey's checks
    }
    let written: Vec<f64> = in_mix
        .iter()
        .map(|&k| read[k].weight.as_ref().map_or(1.0, |w| w.0))
        .collect();
    let whole = weights::whole(&written).map_err(|e| {
        let (index, message) = match e {
            WeightError::Decimals { index } => (
                index,
                format!(
                    "`{}` has more than 3 decimals (weights are made whole numbers by scaling them by at most 1000)",
                    written[index]
                ),
            ),
            WeightError::TooLong { total, largest } => (
                largest,
                format!(
                    "the weights make a cycle of {} requests, more than {MAX_CYCLE} (each request of the cycle is held in memory: use smaller numbers or fewer decimals)",
                    if total == u128::MAX { "too many".to_string() } else { total.to_string() }
                ),
            ),
        };
        let q = &read[in_mix[index]];
        let start = q.weight.as_ref().map_or(q.table.start, |w| w.1.start);
        r.src.err(
            start,
            Some("weight"),
            format!("[[request]] {}: weight: {message}", q.number),
        )
    })?;
    for (&k, w) in in_mix.iter().zip(whole) {
        read[k].entry.weight = w;
    }
    Ok(Order::Weighted)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{at, err, read, read_in, target};
    use super::*;
    use std::time::{Duration, Instant};
    use volley_plan::workload::Part;

    /// The columns `tpl` reads.
    fn row_columns(tpl: &Template) -> Vec<usize> {
        tpl.columns().collect()
    }

    fn lit(s: &str) -> Part {
        Part::Lit(s.as_bytes().to_vec())
    }

    #[test]
    fn a_mix_by_weight() {
        let w = read(
            r#"
[[request]]
name = "item"
path = "/items/{rand:1..10000}"
headers = { Accept = "application/json" }
weight = 0.8
expect_status = 200
[[request]]
name = "order"
method = "PUT"
url = "http://127.0.0.1:8080/orders"
headers = ["Content-Type: application/json", "X-Seq: {seq}"]
body = "{{\"id\": {seq}}}"
weight = 0.15
expect_status = ["2xx", 404]
expect_body_contains = ["ok", "id"]
expect_body_regex = "^\\{"
expect_header = "content-type: application/json"
expect_size = "1KiB"
[[request]]
path = "/health"
weight = 0.05
body_size = 16
"#,
        )
        .unwrap();
        assert_eq!(w.order, Order::Weighted);
        // The unnamed one is named by its method (POST: it has a body) and path.
        assert_eq!(w.endpoints, ["item", "order", "POST /health"]);
        let weights: Vec<u64> = w.entries.iter().map(|e| e.weight).collect();
        assert_eq!(weights, [16, 3, 1], "80/15/5 without their common factor");
        assert_eq!(w.cycle.len(), 20);
        let [item, order, health] = &w.entries[..] else {
            panic!()
        };
        assert_eq!(
            (item.endpoint, order.endpoint, health.endpoint),
            (Some(0), Some(1), Some(2))
        );
        assert_eq!(item.method, "GET");
        assert_eq!(
            item.path.parts,
            [lit("/items/"), Part::Rand { lo: 1, hi: 10000 }]
        );
        assert_eq!(
            item.headers,
            [("Accept".into(), Template::literal("application/json"))]
        );
        assert_eq!(item.body, Body::None);
        assert_eq!(item.checks.status, [(200, 200)]);
        assert_eq!(order.method, "PUT");
        assert_eq!(order.path, Template::literal("/orders"));
        assert_eq!(order.headers[1].1.parts, [Part::Seq]);
        let Body::Template(b) = &order.body else {
            panic!("{:?}", order.body)
        };
        assert_eq!(b.parts, [lit("{\"id\": "), Part::Seq, lit("}")]);
        assert_eq!(order.checks.status, [(200, 299), (404, 404)]);
        assert_eq!(order.checks.body_contains.len(), 2);
        assert!(order.checks.body_regex.is_some());
        assert_eq!(
            order.checks.headers,
            [("content-type".into(), Some("application/json".into()))]
        );
        assert_eq!(order.checks.size, Some(1024));
        assert_eq!(health.method, "POST", "a body makes it a POST");
        assert_eq!(health.body, Body::Bytes(generated_body(16).into()));
        assert_eq!(w.hash.len(), 64);
        assert_eq!(w.source, "mix.toml");
    }

    #[test]
    fn the_command_lines_checks_come_first() {
        let target = target();
        let cli = Checks {
            status: vec![(200, 299)],
            body_contains: vec![b"ok".to_vec()],
            ..Default::default()
        };
        let w = super::super::parse(
            b"[[request]]\npath = \"/a\"\n[[request]]\npath = \"/b\"\nexpect_status = 201\nexpect_body_contains = \"id\"\n",
            std::path::Path::new("mix.toml"),
            Run {
                target: &target,
                checks: &cli,
                grpc: None,
                ws: false,
            },
        )
        .unwrap();
        assert_eq!(w.entries[0].checks, cli);
        assert_eq!(w.entries[1].checks.status, [(201, 201)]);
        assert_eq!(
            w.entries[1].checks.body_contains,
            [b"ok".to_vec(), b"id".to_vec()]
        );
    }

    #[test]
    fn a_sequence_is_walked_in_sequence_order() {
        let w = read(
            "[[request]]\npath = \"/b\"\nsequence = 2\n[[request]]\npath = \"/a\"\nsequence = 1\n[[request]]\npath = \"/c\"\nsequence = 10\n",
        )
        .unwrap();
        assert_eq!(w.order, Order::Sequence);
        let paths: Vec<_> = w
            .entries
            .iter()
            .map(|e| e.path.literal_bytes().unwrap())
            .collect();
        assert_eq!(paths, [b"/a".to_vec(), b"/b".to_vec(), b"/c".to_vec()]);
        assert!(w.cycle.is_empty());
        assert!(w.entries.iter().all(|e| e.weight == 0));
    }

    #[test]
    fn rows_come_from_the_data_file_next_to_the_requests_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("users.csv"),
            "id,email\n1,a@x.org\n2,b@x.org\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("order.json"), "{\"o\": 1}").unwrap();
        let text = "[data]\nfile = \"users.csv\"\norder = \"random\"\n[[request]]\npath = \"/u/{row.id}\"\nheaders = { X-Email = \"{row.email}\" }\nbody_file = \"order.json\"\n";
        let w = read_in(dir.path(), "mix.toml", text).unwrap();
        let d = w.data.as_ref().unwrap();
        assert_eq!(d.columns, ["id", "email"]);
        assert_eq!(d.order, RowOrder::Random);
        assert_eq!(d.rows.len(), 2);
        let e = &w.entries[0];
        assert_eq!(row_columns(&e.path), [0]);
        assert_eq!(row_columns(&e.headers[0].1), [1]);
        assert_eq!(e.body, Body::Bytes(b"{\"o\": 1}".to_vec().into()));
        assert_eq!(e.method, "POST");
        // The hash covers the data file and the body file too.
        std::fs::write(dir.path().join("order.json"), "{\"o\": 2}").unwrap();
        let again = read_in(dir.path(), "mix.toml", text).unwrap();
        assert_ne!(w.hash, again.hash);
        // Values that cannot go in a path or a header as they are.
        std::fs::write(
            dir.path().join("users.csv"),
            "id,email\n1,a@x.org\n2 3,b@x.org\n",
        )
        .unwrap();
        let (line, col, key, msg) = at(read_in(dir.path(), "mix.toml", text).unwrap_err());
        assert_eq!((line, col, key.as_deref()), (5, 12, Some("path")));
        assert!(
            msg.contains("`{row.id}`: row 2 of users.csv holds a space"),
            "{msg}"
        );
    }

    #[test]
    fn a_data_file_that_is_missing_or_lacks_a_column() {
        let dir = tempfile::tempdir().unwrap();
        let text = "[data]\nfile = \"users.csv\"\n[[request]]\npath = \"/u/{row.name}\"\n";
        let (line, col, key, msg) = at(read_in(dir.path(), "mix.toml", text).unwrap_err());
        assert_eq!((line, col, key.as_deref()), (2, 8, Some("file")));
        assert!(
            msg.starts_with("[data]: file: ") && msg.contains("users.csv: No such file"),
            "{msg}"
        );
        std::fs::write(dir.path().join("users.csv"), "id,email\n1,a@x.org\n").unwrap();
        let (line, col, key, msg) = at(read_in(dir.path(), "mix.toml", text).unwrap_err());
        assert_eq!((line, col, key.as_deref()), (4, 12, Some("path")));
        assert_eq!(
            msg,
            "[[request]] 1: path: `{row.name}`: users.csv has no column `name` (its columns: id, email)"
        );
        let (line, _, key, msg) =
            err("[data]\nfile = \"u.csv\"\norder = \"shuffled\"\n[[request]]\npath = \"/\"\n");
        assert_eq!((line, key.as_deref()), (3, Some("order")));
        assert!(msg.contains("not \"sequential\" or \"random\""), "{msg}");
        let (line, _, key, msg) = err("[data]\norder = \"random\"\n[[request]]\npath = \"/\"\n");
        assert_eq!((line, key.as_deref()), (1, Some("file")), "{msg}");
        let (line, col, key, msg) = err("[[request]]\npath = \"/u/{row.id}\"\n");
        assert_eq!((line, col, key.as_deref()), (2, 12, Some("path")));
        assert!(msg.contains("no data file"), "{msg}");
    }

    #[test]
    fn a_body_file_that_cannot_be_read() {
        let (line, col, key, msg) =
            err("[[request]]\npath = \"/\"\nbody_file = \"/no/such.json\"\n");
        assert_eq!((line, col, key.as_deref()), (3, 13, Some("body_file")));
        assert!(
            msg.starts_with("[[request]] 1: body_file: /no/such.json: No such file"),
            "{msg}"
        );
    }

    #[test]
    fn unknown_keys_and_wrong_types() {
        let (line, col, key, msg) = err("[[request]]\npath = \"/\"\nwieght = 3\n");
        assert_eq!((line, col, key.as_deref()), (3, 1, Some("wieght")));
        assert!(
            msg.starts_with("[[request]] 1: unknown key `wieght` (expected one of: name, method"),
            "{msg}"
        );
        let (line, col, key, msg) = err("requests = 1\n[[request]]\npath = \"/\"\n");
        assert_eq!((line, col, key.as_deref()), (1, 1, Some("requests")));
        assert!(msg.contains("unknown top-level key `requests`"), "{msg}");
        let (line, _, key, msg) =
            err("[data]\nfile = \"u.csv\"\nsep = \";\"\n[[request]]\npath = \"/\"\n");
        assert_eq!((line, key.as_deref()), (3, Some("sep")), "{msg}");
        let (line, col, key, msg) = err("[[request]]\npath = 3\n");
        assert_eq!((line, col, key.as_deref()), (2, 8, Some("path")));
        assert_eq!(msg, "[[request]] 1: path: must be a string, not an integer");
        let (_, _, key, msg) = err("[[request]]\npath = \"/\"\nheaders = 3\n");
        assert_eq!(key.as_deref(), Some("headers"));
        assert!(msg.contains("must be a table"), "{msg}");
        let (_, _, key, msg) = err("[[request]]\npath = \"/\"\nheaders = { A = 1 }\n");
        assert_eq!(key.as_deref(), Some("headers.A"));
        assert!(msg.contains("must be a string"), "{msg}");
        let (_, _, key, msg) = err("[[request]]\npath = \"/\"\nheaders = [\"no colon\"]\n");
        assert_eq!(key.as_deref(), Some("headers"));
        assert!(msg.contains("`no …` is not \"Name: value\""), "{msg}");
        let (_, _, key, msg) = err("[[request]]\npath = \"/\"\nheaders = { \"a b\" = \"1\" }\n");
        assert_eq!(key.as_deref(), Some("headers"));
        assert!(msg.contains("`a b` is not a header name"), "{msg}");
        let (_, _, key, msg) = err("[[request]]\npath = \"/\"\nmethod = \"GE T\"\n");
        assert_eq!(key.as_deref(), Some("method"));
        assert!(msg.contains("not an HTTP method"), "{msg}");
        let (_, _, key, msg) = err("request = \"x\"\n");
        assert_eq!(key.as_deref(), Some("request"));
        assert!(msg.contains("array of tables"), "{msg}");
        let (_, _, key, msg) = err("[[request]]\npath = \"/\"\nexpect_size = true\n");
        assert_eq!(key.as_deref(), Some("expect_size"));
        assert!(msg.contains("must be a size"), "{msg}");
    }

    #[test]
    fn a_file_without_requests() {
        let (line, col, key, msg) = err("");
        assert_eq!((line, col, key.as_deref()), (1, 1, Some("request")));
        assert_eq!(msg, "no [[request]]: a requests file has at least one");
        let (line, _, key, _) = err("# nothing\n\n");
        assert_eq!((line, key.as_deref()), (3, Some("request")));
        let (line, col, key, _) = err("request = []\n");
        assert_eq!((line, col, key.as_deref()), (1, 11, Some("request")));
    }

    #[test]
    fn bad_weights() {
        for (w, says) in [
            ("0", "must be a number above 0 (80, or 0.8), not 0"),
            ("-2", "not -2"),
            ("-0.5", "not -0.5"),
            ("nan", "not nan"),
            (
                "\"80\"",
                "must be a number above 0 (80, or 0.8), not a string",
            ),
        ] {
            let (line, col, key, msg) = err(&format!(
                "[[request]]\npath = \"/\"\n[[request]]\npath = \"/b\"\nweight = {w}\n"
            ));
            assert_eq!((line, col, key.as_deref()), (5, 10, Some("weight")), "{w}");
            assert!(msg.starts_with("[[request]] 2: weight: "), "{msg}");
            assert!(msg.contains(says), "{w}: {msg}");
        }
        let (line, _, key, msg) = err("[[request]]\npath = \"/\"\nweight = 0.0001\n");
        assert_eq!((line, key.as_deref()), (3, Some("weight")));
        assert!(msg.contains("`0.0001` has more than 3 decimals"), "{msg}");
        let (line, col, key, msg) =
            err("[[request]]\npath = \"/\"\nweight = 1\n[[request]]\npath = \"/b\"\nweight = 1_000_000\n");
        assert_eq!((line, col, key.as_deref()), (6, 10, Some("weight")));
        assert!(
            msg.contains("a cycle of 1000001 requests, more than 1000000"),
            "{msg}"
        );
    }

    #[test]
    fn sequences_are_all_or_nothing_without_weights_or_duplicates() {
        let (line, col, key, msg) = err("[[request]]\npath = \"/\"\nsequence = 1\nweight = 2\n");
        assert_eq!((line, col, key.as_deref()), (4, 10, Some("weight")));
        assert!(
            msg.contains("weight: cannot be combined with `sequence`"),
            "{msg}"
        );
        let (line, col, key, msg) =
            err("[[request]]\npath = \"/\"\nsequence = 1\n[[request]]\npath = \"/b\"\n");
        assert_eq!((line, col, key.as_deref()), (4, 1, Some("sequence")));
        assert!(
            msg.starts_with("[[request]] 2: missing `sequence`"),
            "{msg}"
        );
        let (line, col, key, msg) =
            err("[[request]]\npath = \"/\"\n[[request]]\npath = \"/b\"\nsequence = 1\n");
        assert_eq!((line, col, key.as_deref()), (5, 12, Some("sequence")));
        assert!(msg.contains("[[request]] 1 has none"), "{msg}");
        let (line, _, key, msg) = err(
            "[[request]]\npath = \"/\"\nsequence = 1\n[[request]]\npath = \"/b\"\nsequence = 1\n",
        );
        assert_eq!((line, key.as_deref()), (6, Some("sequence")));
        assert!(msg.contains("1 is also [[request]] 1's"), "{msg}");
        let (_, _, key, msg) = err("[[request]]\npath = \"/\"\nsequence = 1.5\n");
        assert_eq!(key.as_deref(), Some("sequence"));
        assert!(msg.contains("must be an integer, not a float"), "{msg}");
    }

    #[test]
    fn path_and_url() {
        let (line, col, key, msg) =
            err("[[request]]\npath = \"/\"\nurl = \"http://127.0.0.1:8080/\"\n");
        assert_eq!((line, col, key.as_deref()), (3, 7, Some("url")));
        assert!(msg.contains("url: cannot be combined with `path`"), "{msg}");
        let (line, col, key, msg) = err("[[request]]\nname = \"x\"\n");
        assert_eq!((line, col, key.as_deref()), (1, 1, Some("path")));
        assert!(msg.starts_with("[[request]] 1: missing `path"), "{msg}");
        let (line, col, key, msg) = err("[[request]]\npath = \"items\"\n");
        assert_eq!((line, col, key.as_deref()), (2, 8, Some("path")));
        assert!(msg.contains("`items` does not start with `/`"), "{msg}");
        let (_, _, key, msg) = err("[[request]]\npath = \"/a b\"\n");
        assert_eq!(key.as_deref(), Some("path"));
        assert!(msg.contains("holds a space (percent-encode it)"), "{msg}");
        for other in [
            "http://127.0.0.1:9090/x",
            "https://127.0.0.1:8080/x",
            "http://example.com:8080/x",
        ] {
            let (line, col, key, msg) = err(&format!("[[request]]\nurl = \"{other}\"\n"));
            assert_eq!((line, col, key.as_deref()), (2, 7, Some("url")));
            assert!(
                msg.contains(&format!(
                    "`{other}` is not on the run's http://127.0.0.1:8080"
                )),
                "{msg}"
            );
        }
        let (_, _, key, msg) = err("[[request]]\nurl = \"ftp://127.0.0.1:8080/\"\n");
        assert_eq!(key.as_deref(), Some("url"));
        assert!(msg.contains("unsupported scheme"), "{msg}");
        // The host in any case, the default port spelled out or not.
        let w = read("[[request]]\nurl = \"HTTP://127.0.0.1:8080/x?q={seq}\"\n").unwrap();
        assert_eq!(w.entries[0].path.parts, [lit("/x?q="), Part::Seq]);
    }

    #[test]
    fn body_keys_go_alone() {
        let (line, col, key, msg) = err("[[request]]\npath = \"/\"\nbody = \"x\"\nbody_size = 3\n");
        assert_eq!((line, col, key.as_deref()), (4, 13, Some("body_size")));
        assert!(
            msg.contains("body_size: cannot be combined with `body`"),
            "{msg}"
        );
        let (_, _, key, msg) = err("[[request]]\npath = \"/\"\nbody_size = \"2GiB\"\n");
        assert_eq!(key.as_deref(), Some("body_size"));
        assert!(msg.contains("more than the 1 GiB"), "{msg}");
        let w = read("[[request]]\npath = \"/\"\nbody = \"\"\n").unwrap();
        assert_eq!(w.entries[0].method, "POST");
    }

    #[test]
    fn template_errors_point_at_the_placeholder() {
        let (line, col, key, msg) = err("[[request]]\npath = \"/a/{seq\"\n");
        assert_eq!((line, col, key.as_deref()), (2, 12, Some("path")));
        assert!(
            msg.starts_with("[[request]] 1: path: `{seq` never closes"),
            "{msg}"
        );
        let (line, col, key, msg) = err("[[request]]\npath = \"/a/{nope}\"\n");
        assert_eq!((line, col, key.as_deref()), (2, 12, Some("path")));
        assert!(msg.contains("unknown placeholder `{nope}`"), "{msg}");
        let (line, col, key, msg) = err("[[request]]\npath = \"/a/{rand:9..1}\"\n");
        assert_eq!((line, col, key.as_deref()), (2, 12, Some("path")));
        assert!(
            msg.ends_with("`{rand:9..1}`: LO 9 is more than HI 1"),
            "{msg}"
        );
        let (line, col, key, msg) =
            err("[[request]]\npath = \"/\"\nbody = \"{\\\"id\\\": {seq}}\"\n");
        assert_eq!((line, col, key.as_deref()), (3, 9, Some("body")));
        assert!(msg.contains("{{\"id\": {seq}}}"), "{msg}");
        let (line, _, key, msg) = err("[[request]]\npath = \"/\"\nheaders = { X = \"{uid}\" }\n");
        assert_eq!((line, key.as_deref()), (3, Some("headers")));
        assert!(msg.contains("unknown placeholder `{uid}`"), "{msg}");
        // Method and names are literal: a brace there is a character.
        let w = read("[[request]]\nname = \"{seq}\"\npath = \"/\"\n").unwrap();
        assert_eq!(w.endpoints, ["{seq}"]);
    }

    #[test]
    fn bad_checks() {
        let (line, col, key, msg) = err("[[request]]\npath = \"/\"\nexpect_body_regex = \"(\"\n");
        assert_eq!(
            (line, col, key.as_deref()),
            (3, 21, Some("expect_body_regex"))
        );
        assert!(
            msg.starts_with("[[request]] 1: expect_body_regex: `(` is not a regex"),
            "{msg}"
        );
        let (line, col, key, msg) =
            err("[[request]]\npath = \"/\"\nexpect_status = [200, \"2yy\"]\n");
        assert_eq!((line, col, key.as_deref()), (3, 23, Some("expect_status")));
        assert!(msg.contains("`2yy` is not a status"), "{msg}");
        let (_, _, key, msg) = err("[[request]]\npath = \"/\"\nexpect_status = 42\n");
        assert_eq!(key.as_deref(), Some("expect_status"));
        assert!(msg.contains("`42` is not a status (100 to 599)"), "{msg}");
        let (_, _, _, msg) = err("[[request]]\npath = \"/\"\nexpect_status = []\n");
        assert!(msg.contains("an empty list allows no status"), "{msg}");
        let (_, _, key, msg) =
            err("[[request]]\npath = \"/\"\nexpect_header = [\"ok\", \"a b\"]\n");
        assert_eq!(key.as_deref(), Some("expect_header"));
        assert!(msg.contains("`a b`: expected a header name"), "{msg}");
        let (_, _, key, _) = err("[[request]]\npath = \"/\"\nexpect_body_contains = [1]\n");
        assert_eq!(key.as_deref(), Some("expect_body_contains"));
    }

    #[test]
    fn names_are_endpoints_up_to_a_hundred() {
        let named = |n: usize| {
            let mut s = String::new();
            for i in 0..n {
                s += &format!("[[request]]\nname = \"n{i}\"\npath = \"/{i}\"\n[[request]]\nname = \"n{i}\"\npath = \"/again\"\n");
            }
            s
        };
        let w = read(&named(100)).unwrap();
        assert_eq!(w.endpoints.len(), 100);
        assert_eq!(w.entries[199].endpoint, Some(99));
        let (line, col, key, msg) = err(&named(101));
        assert_eq!((line, col, key.as_deref()), (602, 8, Some("name")));
        assert!(
            msg.starts_with("[[request]] 201: name: `n100` would be the 101st name: at most 100"),
            "{msg}"
        );
        let (_, _, key, msg) = err("[[request]]\nname = \"\"\npath = \"/\"\n");
        assert_eq!(key.as_deref(), Some("name"));
        assert!(msg.contains("empty"), "{msg}");
    }

    #[test]
    fn the_contracts_example_reads() {
        let contract = include_str!("../../../../../docs/contract.md");
        let section = &contract[contract.find("## Workloads").unwrap()..];
        let start = section.find("```toml\n").unwrap() + "```toml\n".len();
        let example = &section[start..start + section[start..].find("```").unwrap()];
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("users.csv"), "id,email\n7,a@x.org\n").unwrap();
        let w = read_in(dir.path(), "mix.toml", example).unwrap();
        assert_eq!(w.endpoints, ["item", "order", "GET /health"]);
        assert_eq!(
            w.entries.iter().map(|e| e.weight).collect::<Vec<_>>(),
            [16, 3, 1]
        );
        let Body::Template(b) = &w.entries[1].body else {
            panic!("{:?}", w.entries[1].body)
        };
        assert_eq!(
            b.parts,
            [
                lit("{\"id\": "),
                Part::Seq,
                lit(", \"key\": \""),
                Part::Uuid,
                lit("\"}")
            ]
        );
    }

    #[test]
    fn a_hundred_thousand_unnamed_requests_load_quickly() {
        let file = |n: usize| {
            let mut text = String::with_capacity(n * 40);
            for i in 0..n {
                text += &format!("[[request]]\npath = \"/items/{i}\"\n");
            }
            text
        };
        let (small, text) = (file(10_000), file(100_000));
        // Linear, not quadratic: ten times the requests take about ten times as long (a
        // quadratic loader would take a hundred). The best of three runs of each, alternated,
        // so that a busy machine slows both alike; no wall-clock bound of its own.
        let best = |t: &str| {
            let s = Instant::now();
            let w = read(t).unwrap();
            (s.elapsed(), w)
        };
        let (mut t_small, mut t_large) = (Duration::MAX, Duration::MAX);
        let mut w = None;
        for _ in 0..3 {
            t_small = t_small.min(best(&small).0);
            let (t, got) = best(&text);
            t_large = t_large.min(t);
            w = Some(got);
        }
        let w = w.unwrap();
        let ratio = t_large.as_secs_f64() / t_small.as_secs_f64().max(1e-6);
        assert!(
            ratio < 40.0,
            "10k in {t_small:?}, 100k in {t_large:?}: ×{ratio:.0}"
        );
        assert_eq!(w.entries.len(), 100_000);
        // 100 default names, then `other` for the 99,900 other paths.
        assert_eq!(w.endpoints.len(), 101);
        assert_eq!(w.endpoints[99], "GET /items/99");
        assert_eq!(w.other, Some(100));
        assert!(w.entries.iter().all(|e| e.weight == 1));
        assert!(w.entries[100..].iter().all(|e| e.endpoint == Some(100)));
        assert_eq!(w.cycle.len(), 100_000);
        assert_eq!(w.pick(99_999, 0), 99_999);
    }
}
