//! The lines around a RunResult printed into a log that holds other output
//! (`volley run --json - --json-markers`): `kubectl logs` joins a pod's stdout and stderr, and
//! the summary and warnings go to stderr. The same idea as PEM's armour lines.

/// The line before the JSON.
pub(crate) const BEGIN: &str = "-----BEGIN VOLLEY RUNRESULT-----";
/// The line after the JSON.
pub(crate) const END: &str = "-----END VOLLEY RUNRESULT-----";

/// What a log holds: the JSON between the markers, and the lines outside them.
#[derive(Debug, Default, PartialEq)]
pub struct Extracted {
    /// The last complete block's JSON.
    pub json: Option<String>,
    /// A BEGIN line had no END after it (the log was cut: the container was killed while
    /// writing, or the log rotated).
    pub truncated: bool,
    /// The lines outside any block, in order (the summary, warnings, errors).
    pub other: Vec<String>,
}

/// Splits a log into its RunResult (the last complete block) and the other lines.
pub fn extract(log: &str) -> Extracted {
    let mut out = Extracted::default();
    let mut block: Option<String> = None;
    for line in log.lines() {
        let trimmed = line.trim_end_matches('\r');
        match (&mut block, trimmed) {
            (None, BEGIN) => block = Some(String::new()),
            (Some(_), END) => out.json = block.take(),
            // A BEGIN inside a block: the first was cut short.
            (Some(b), BEGIN) => b.clear(),
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            (None, l) => out.other.push(l.to_string()),
        }
    }
    out.truncated = block.is_some();
    out
}

/// `json` framed by the markers, each on its own line.
pub fn frame(json: &str) -> String {
    let mut s = String::with_capacity(json.len() + BEGIN.len() + END.len() + 3);
    s.push_str(BEGIN);
    s.push('\n');
    s.push_str(json);
    if !json.ends_with('\n') {
        s.push('\n');
    }
    s.push_str(END);
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_comes_out_of_a_log_with_stderr_around_it() {
        let log = format!(
            "volley: waiting for the start\nsummary line\n{}volley: warning: x\n",
            frame("{\n  \"a\": 1\n}")
        );
        let e = extract(&log);
        assert_eq!(e.json.as_deref(), Some("{\n  \"a\": 1\n}\n"));
        assert!(!e.truncated);
        assert_eq!(
            e.other,
            [
                "volley: waiting for the start",
                "summary line",
                "volley: warning: x"
            ]
        );
    }

    #[test]
    fn a_cut_block_is_truncated_and_the_last_whole_one_wins() {
        let log = format!(
            "{}{}{BEGIN}\n{{\"b\":",
            frame("{\"a\":1}"),
            frame("{\"a\":2}")
        );
        let e = extract(&log);
        assert_eq!(e.json.as_deref(), Some("{\"a\":2}\n"));
        assert!(e.truncated);
        let none = extract("just stderr\n");
        assert_eq!(none.json, None);
        assert!(!none.truncated);
    }

    #[test]
    fn crlf_logs_are_read_too() {
        let e = extract(&format!("{BEGIN}\r\n{{}}\r\n{END}\r\n"));
        assert_eq!(e.json.as_deref(), Some("{}\n"));
    }
}
