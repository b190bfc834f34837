//! What changed between two profiles, A and B, per request: each side's samples × its period
//! ÷ its requests, so runs of different lengths and rates compare. Per function, self and
//! total µs per request on each side and the change; the largest changes of total first.

use std::collections::BTreeSet;
use std::fmt::{self, Write};

use serde::{Deserialize, Serialize};

use super::top::{by_function, Samples};
use super::{markdown_name, printable, signed_us, us, Profile};

/// One function in A and in B (0 on a side where it never appeared).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDiff {
    /// The frame's name.
    pub name: String,
    /// Self CPU µs per request in A.
    pub a_self_us_per_request: f64,
    /// Self CPU µs per request in B.
    pub b_self_us_per_request: f64,
    /// Total CPU µs per request in A.
    pub a_total_us_per_request: f64,
    /// Total CPU µs per request in B.
    pub b_total_us_per_request: f64,
    /// B's self µs per request − A's.
    pub self_change_us_per_request: f64,
    /// B's total µs per request − A's.
    pub total_change_us_per_request: f64,
}

/// `serialize_json +4.1 µs/req (12.0 → 16.1)`: the change of total CPU per request.
impl fmt::Display for FunctionDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} µs/req ({} → {})",
            self.name,
            signed_us(self.total_change_us_per_request),
            us(self.a_total_us_per_request),
            us(self.b_total_us_per_request)
        )
    }
}

/// Two profiles compared per request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    /// All of A's samples, CPU µs per request.
    pub a_us_per_request: f64,
    /// All of B's samples, CPU µs per request.
    pub b_us_per_request: f64,
    /// Every function of either side, the largest absolute change of **self** µs per request
    /// first: the function whose own code got slower or faster, not the callers that only
    /// carry its change on their stacks (changes within 1 ns per request count as equal: then
    /// the larger change of total, then by name).
    pub functions: Vec<FunctionDiff>,
}

/// A against B, per request.
pub fn diff(a: Profile, b: Profile) -> Diff {
    let (fa, fb) = (by_function(a.folded), by_function(b.folded));
    let names: BTreeSet<&str> = fa.keys().chain(fb.keys()).copied().collect();
    let mut functions: Vec<FunctionDiff> = names
        .into_iter()
        .map(|name| {
            let sa = fa.get(name).copied().unwrap_or_default();
            let sb = fb.get(name).copied().unwrap_or_default();
            function(name, (a, sa), (b, sb))
        })
        .collect();
    functions.sort_by(|x, y| {
        let key = |d: &FunctionDiff| {
            (
                ns(d.self_change_us_per_request),
                ns(d.total_change_us_per_request),
            )
        };
        key(y).cmp(&key(x)).then_with(|| x.name.cmp(&y.name))
    });
    Diff {
        a_us_per_request: a.us_per_request(a.folded.total()),
        b_us_per_request: b.us_per_request(b.folded.total()),
        functions,
    }
}

/// One function's figures on both sides.
fn function(name: &str, (a, sa): (Profile, Samples), (b, sb): (Profile, Samples)) -> FunctionDiff {
    let (a_self, b_self) = (a.us_per_request(sa.leaf), b.us_per_request(sb.leaf));
    let (a_total, b_total) = (a.us_per_request(sa.total), b.us_per_request(sb.total));
    FunctionDiff {
        name: name.to_string(),
        a_self_us_per_request: a_self,
        b_self_us_per_request: b_self,
        a_total_us_per_request: a_total,
        b_total_us_per_request: b_total,
        self_change_us_per_request: b_self - a_self,
        total_change_us_per_request: b_total - a_total,
    }
}

/// |µs| in whole ns: the sort's key (saturating; NaN is 0).
fn ns(us: f64) -> u64 {
    (us.abs() * 1000.0).round() as u64
}

impl Diff {
    /// The first `n` functions whose total or self changed (by 1 ns per request or more).
    pub fn largest(&self, n: usize) -> impl Iterator<Item = &FunctionDiff> {
        self.functions
            .iter()
            .filter(|d| {
                ns(d.total_change_us_per_request) > 0 || ns(d.self_change_us_per_request) > 0
            })
            .take(n)
    }
}

/// `+4.1 (12.0 → 16.1)`.
fn change(a: f64, b: f64) -> String {
    format!("{} ({} → {})", signed_us(b - a), us(a), us(b))
}

/// The whole profile's change, one line.
fn headline(d: &Diff) -> String {
    let (a, b) = (d.a_us_per_request, d.b_us_per_request);
    format!(
        "CPU per request: {} µs/req ({} → {})",
        signed_us(b - a),
        us(a),
        us(b)
    )
}

/// The `n` largest changes for a terminal: the whole profile's, then per function the
/// change of total and of self µs per request, A → B.
pub fn diff_text(d: &Diff, n: usize) -> String {
    let rows: Vec<(String, String, String)> = d
        .largest(n)
        .map(|f| {
            (
                printable(&f.name, 60),
                change(f.a_total_us_per_request, f.b_total_us_per_request),
                change(f.a_self_us_per_request, f.b_self_us_per_request),
            )
        })
        .collect();
    let width = |col: &dyn Fn(&(String, String, String)) -> usize, head: &str| {
        rows.iter()
            .map(col)
            .chain([head.chars().count()])
            .max()
            .unwrap_or(0)
    };
    let w0 = width(&|r| r.0.chars().count(), "function");
    let w1 = width(&|r| r.1.chars().count(), "total µs/req (A → B)");
    let mut o = format!("{}\n", headline(d));
    let _ = writeln!(
        o,
        "{:<w0$}  {:<w1$}  self µs/req (A → B)",
        "function", "total µs/req (A → B)"
    );
    for (name, total, own) in &rows {
        let _ = writeln!(o, "{name:<w0$}  {total:<w1$}  {own}");
    }
    o
}

/// The `n` largest changes in Markdown: the whole profile's, then a table.
pub fn diff_markdown(d: &Diff, n: usize) -> String {
    let mut o = format!(
        "{}\n\n| function | total µs/req (A → B) | self µs/req (A → B) |\n|---|---:|---:|\n",
        headline(d)
    );
    for f in d.largest(n) {
        let _ = writeln!(
            o,
            "| {} | {} | {} |",
            markdown_name(&f.name),
            change(f.a_total_us_per_request, f.b_total_us_per_request),
            change(f.a_self_us_per_request, f.b_self_us_per_request)
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::super::Folded;
    use super::*;

    const V1: &str = "srv;main;handle;burn 600\n\
                      srv;main;handle;serialize_json 120\n\
                      srv;main;handle;parse 80\n\
                      srv;main;write 200\n";

    /// V1 over twice the requests (so twice the samples) with 41 samples more in
    /// serialize_json per 10,000 requests.
    fn v2() -> String {
        "srv;main;handle;burn 1200\n\
         srv;main;handle;serialize_json 322\n\
         srv;main;handle;parse 160\n\
         srv;main;write 400\n"
            .into()
    }

    #[test]
    fn the_function_that_grew_comes_first() {
        let (a, b) = (Folded::parse(V1).unwrap(), Folded::parse(&v2()).unwrap());
        // 1,000 µs a sample: A's serialize_json 120 samples over 10,000 requests is 12 µs.
        let d = diff(
            Profile::new(&a, 1000.0, 10_000),
            Profile::new(&b, 1000.0, 20_000),
        );
        let first = &d.functions[0];
        assert_eq!(first.name, "serialize_json", "{:#?}", d.functions);
        assert!((first.total_change_us_per_request - 4.1).abs() < 1e-9);
        assert_eq!(
            first.to_string(),
            "serialize_json +4.1 µs/req (12.0 → 16.1)"
        );
        // Its callers carry the same change of total, after it; the rest did not change.
        let order: Vec<&str> = d.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            order,
            [
                "serialize_json",
                "handle",
                "main",
                "srv",
                "burn",
                "parse",
                "write"
            ]
        );
        assert_eq!(d.largest(10).count(), 4);
        assert!((d.b_us_per_request - d.a_us_per_request - 4.1).abs() < 1e-9);
    }

    /// `tests/fixtures/report/flame/NAME` (its README says how it was recorded).
    fn fixture(name: &str) -> Folded {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let path = dir.join("../../tests/fixtures/report/flame").join(name);
        Folded::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn the_recorded_regression_is_serialize_json() {
        let (a, b) = (fixture("cserver-v1.folded"), fixture("cserver-v2.folded"));
        let period = 1e6 / 499.0;
        let d = diff(
            Profile::new(&a, period, 29_219),
            Profile::new(&b, period, 23_166),
        );
        let json = d
            .functions
            .iter()
            .find(|f| f.name == "serialize_json")
            .unwrap();
        assert!(
            (9.0..14.0).contains(&json.total_change_us_per_request),
            "twice the work: {json}"
        );
        // Its work is its callees': the largest growth of its own code leads the list, and
        // it is one of them; no caller (which only carries the change) ranks first.
        assert_eq!(d.functions[0].name, "format_number", "{}", d.functions[0]);
        let callers = [
            "cserver",
            "__libc_start_call_main",
            "main",
            "serve_connection",
        ];
        assert!(!callers.contains(&d.functions[0].name.as_str()));
        assert!((d.b_us_per_request - d.a_us_per_request - 13.1).abs() < 0.05);
    }

    #[test]
    fn a_function_on_one_side_only_has_zero_on_the_other() {
        let a = Folded::parse("srv;old_path 10\nsrv;burn 90\n").unwrap();
        let b = Folded::parse("srv;new_path 30\nsrv;burn 90\n").unwrap();
        let d = diff(Profile::new(&a, 100.0, 10), Profile::new(&b, 100.0, 10));
        let get = |n: &str| d.functions.iter().find(|f| f.name == n).unwrap();
        assert_eq!(get("old_path").b_total_us_per_request, 0.0);
        assert_eq!(get("old_path").total_change_us_per_request, -100.0);
        assert_eq!(get("new_path").a_self_us_per_request, 0.0);
        assert_eq!(get("new_path").self_change_us_per_request, 300.0);
        assert_eq!(
            d.functions[0].name, "new_path",
            "the largest change, by size"
        );
        assert_eq!(
            d.functions[1].name, "old_path",
            "a shrink ranks by its size; the process frame (no change of its own) after"
        );
    }

    #[test]
    fn tables_of_the_largest_changes() {
        let (a, b) = (Folded::parse(V1).unwrap(), Folded::parse(&v2()).unwrap());
        let d = diff(
            Profile::new(&a, 1000.0, 10_000),
            Profile::new(&b, 1000.0, 20_000),
        );
        let md = diff_markdown(&d, 2);
        assert!(
            md.starts_with("CPU per request: +4.1 µs/req (100.0 → 104.1)\n\n"),
            "{md}"
        );
        assert!(md.contains("| `serialize_json` | +4.1 (12.0 → 16.1) | +4.1 (12.0 → 16.1) |"));
        assert!(
            md.contains("| `handle` | +4.1 (80.0 → 84.1) | 0.0 (0.0 → 0.0) |"),
            "{md}"
        );
        assert_eq!(md.lines().count(), 4 + 2);
        let text = diff_text(&d, 10);
        assert!(text
            .lines()
            .nth(2)
            .unwrap()
            .starts_with("serialize_json  +4.1 (12.0 → 16.1)"));
        assert_eq!(
            text.lines().count(),
            2 + 4,
            "unchanged functions left out: {text}"
        );
        let hostile = Folded::parse("srv;a|b 1\n").unwrap();
        let d = diff(Profile::new(&a, 1.0, 1), Profile::new(&hostile, 1.0, 1));
        assert!(diff_markdown(&d, 50).contains("| `a\\|b` |"));
    }
}
