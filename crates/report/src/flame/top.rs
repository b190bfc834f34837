//! The functions that cost the most CPU per request: per frame name, **self** samples (the
//! function was the leaf: it was running) and **total** samples (it was on the stack:
//! running or waiting on a callee; once per sample, however deep it recursed), as µs per
//! request and as a share of all samples; with a terminal and a Markdown table of them.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use super::{markdown_name, printable, us, Folded};

/// One function's CPU cost (the RunResult's `server.profile.top[]`).
pub use volley_model::result::profile::FunctionCost;

/// Self and total samples of one function.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Samples {
    /// As the leaf.
    pub(crate) leaf: u64,
    /// On the stack, once per sample.
    pub(crate) total: u64,
}

/// Every function of `f` with its samples.
pub(crate) fn by_function(f: &Folded) -> HashMap<&str, Samples> {
    let mut m: HashMap<&str, Samples> = HashMap::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for (stack, count) in f.stacks() {
        seen.clear();
        let mut leaf = "";
        for frame in stack.split(';') {
            leaf = frame;
            if seen.insert(frame) {
                m.entry(frame).or_default().total += count;
            }
        }
        m.entry(leaf).or_default().leaf += count;
    }
    m
}

/// The `n` functions with the most self samples (then the most total samples, then by name),
/// the first frame of each stack (the process) left out, their samples made µs per request by
/// `period_us` (CPU time one sample stands for) and `requests` (the run's completed requests;
/// null without any). The RunResult's `server.profile.top` is this list.
pub fn top(f: &Folded, period_us: f64, requests: u64, n: usize) -> Vec<FunctionCost> {
    volley_model::result::profile::top(f.stacks(), period_us, requests, n)
}

/// The longest name the terminal table shows.
const TEXT_NAME_CHARS: usize = 60;

/// The table for a terminal: function, self µs/req, self %, total µs/req, total %.
pub fn top_text(costs: &[FunctionCost]) -> String {
    let names: Vec<String> = costs
        .iter()
        .map(|c| printable(&c.name, TEXT_NAME_CHARS))
        .collect();
    let w = names
        .iter()
        .map(|n| n.chars().count())
        .chain(["function".len()])
        .max()
        .unwrap_or(8);
    let mut o = format!(
        "{:<w$}  {:>12}  {:>7}  {:>13}  {:>7}\n",
        "function", "self µs/req", "self %", "total µs/req", "total %"
    );
    for (c, name) in costs.iter().zip(&names) {
        let _ = writeln!(
            o,
            "{name:<w$}  {:>12}  {:>6.1}%  {:>13}  {:>6.1}%",
            opt_us(c.self_us_per_request),
            c.self_pct,
            opt_us(c.total_us_per_request),
            c.total_pct
        );
    }
    o
}

/// µs for a table, `-` where nothing completed.
fn opt_us(v: Option<f64>) -> String {
    v.map_or("-".into(), us)
}

/// The table in Markdown, names as code spans with their pipes escaped.
pub fn top_markdown(costs: &[FunctionCost]) -> String {
    let mut o = String::from(
        "| function | self µs/req | self % | total µs/req | total % |\n\
         |---|---:|---:|---:|---:|\n",
    );
    for c in costs {
        let _ = writeln!(
            o,
            "| {} | {} | {:.1} % | {} | {:.1} % |",
            markdown_name(&c.name),
            opt_us(c.self_us_per_request),
            c.self_pct,
            opt_us(c.total_us_per_request),
            c.total_pct
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(text: &str) -> Folded {
        Folded::parse(text).unwrap()
    }

    #[test]
    fn self_is_the_leaf_and_total_the_whole_stack() {
        let f = folded("srv;main;handle;burn 60\nsrv;main;handle;parse 30\nsrv;main 10\n");
        let t = top(&f, 1000.0, 100, 10);
        let names: Vec<&str> = t.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            ["burn", "parse", "main", "handle"],
            "the process is no function"
        );
        let get = |n: &str| t.iter().find(|c| c.name == n).unwrap();
        assert_eq!(
            (get("burn").self_samples, get("burn").total_samples),
            (60, 60)
        );
        assert_eq!(
            (get("main").self_samples, get("main").total_samples),
            (10, 100)
        );
        assert_eq!(
            (get("handle").self_samples, get("handle").total_samples),
            (0, 90)
        );
        assert_eq!(get("handle").total_pct, 90.0);
        assert_eq!(get("burn").self_pct, 60.0);
        assert_eq!(top(&f, 1000.0, 100, 2).len(), 2);
    }

    #[test]
    fn recursion_is_counted_once_per_sample() {
        let f = folded("a;fib;fib;fib;fib 8\na;fib;fib 2\na;walk;walk;leaf 5\n");
        let t = top(&f, 1.0, 1, 10);
        let get = |n: &str| t.iter().find(|c| c.name == n).unwrap();
        assert_eq!(get("fib").total_samples, 10, "not 8 × 4 + 2 × 2");
        assert_eq!(get("fib").self_samples, 10);
        assert_eq!(get("walk").total_samples, 5);
        assert_eq!(get("walk").self_samples, 0);
        assert!(
            t.iter().all(|c| c.name != "a"),
            "the process is no function"
        );
    }

    #[test]
    fn samples_become_microseconds_per_request() {
        // 499 Hz: a sample stands for 1e6 / 499 µs; 998 samples over 2,000 requests are
        // 2 s of CPU over 2,000 requests: 1,000 µs each.
        let f = folded("srv;burn 998\nsrv;idle 2\n");
        let t = top(&f, 1e6 / 499.0, 2000, 10);
        assert_eq!(t[0].self_us_per_request, Some(1000.0));
        assert_eq!(t[0].total_us_per_request, Some(1000.0));
        assert_eq!(t[1].name, "idle");
        assert_eq!(t[1].self_us_per_request, Some(2.0));
        assert_eq!(top(&f, 2004.0, 0, 10)[0].self_us_per_request, None);
        assert!(top(&Folded::default(), 2004.0, 10, 10).is_empty());
    }

    #[test]
    fn tables_show_every_column_and_keep_names_text() {
        let f = folded("srv;a|b 3\nsrv;`x` 1\nsrv;<b>bold</b> 1\nsrv;\u{1b}[31mred 1\n");
        let t = top(&f, 1000.0, 10, 10);
        let md = top_markdown(&t);
        assert!(md.starts_with("| function | self µs/req | self % | total µs/req | total % |"));
        assert!(
            md.contains("| `a\\|b` | 300.0 | 50.0 % | 300.0 | 50.0 % |"),
            "{md}"
        );
        assert!(
            md.contains("| ``x`` |") || md.contains("| `` `x` `` |"),
            "{md}"
        );
        assert!(
            md.contains("`<b>bold</b>`"),
            "HTML inside a code span is text: {md}"
        );
        assert_eq!(
            md.lines().count(),
            2 + 4,
            "four functions (the process is none)"
        );
        let text = top_text(&t);
        assert!(text.lines().next().unwrap().starts_with("function"));
        assert!(text.contains("a|b"));
        assert!(
            !text.contains('\u{1b}'),
            "an escape sequence reached the terminal"
        );
        assert!(text.contains("?[31mred"));
    }
}
