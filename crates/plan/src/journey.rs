//! A journey: requests that keep state per virtual user — values captured from one response
//! and sent in the next (`{var.NAME}`), a cookie jar, steps run once when a user starts, and
//! think times per step (docs/contract.md, "Journeys"). The plan holds what was declared; the
//! engine keeps each user's values.

/// The most variables a file may capture: a user's set variables are one `u64` bitmask, so
/// whether a step can go is one AND.
pub const MAX_VARS: usize = 64;

/// A captured value is cut to this many bytes (a token, an id, a CSRF field; not a page).
pub const MAX_VALUE_BYTES: usize = 4096;

/// How much of a body a JSON or regex capture sees: the first 64 KiB, as a body regex check.
pub const CAPTURE_WINDOW_BYTES: usize = super::workload::REGEX_WINDOW_BYTES;

/// Where a capture takes its value from.
#[derive(Debug, Clone)]
pub enum CaptureFrom {
    /// A JSON pointer (RFC 6901) into the body; a `$.a.b[0]` path is read as `/a/b/0`. A
    /// string is taken without its quotes, a number, `true`, `false` or `null` as written, an
    /// object or array as its JSON.
    Json(String),
    /// A regex over the body's first [`CAPTURE_WINDOW_BYTES`]: its group `group` (0: the whole
    /// match) of the first match.
    Regex {
        /// The pattern.
        re: regex::bytes::Regex,
        /// The group taken.
        group: usize,
    },
    /// A response header's value (its first field of that name, trimmed); the name is lower case.
    Header(String),
    /// The value of a cookie the response sets (`Set-Cookie: NAME=value`).
    Cookie(String),
}

impl CaptureFrom {
    /// Whether it reads the body.
    pub fn reads_body(&self) -> bool {
        matches!(self, CaptureFrom::Json(_) | CaptureFrom::Regex { .. })
    }

    /// Its kind as the file writes it (`json`, `regex`, `header`, `cookie`).
    pub fn kind(&self) -> &'static str {
        match self {
            CaptureFrom::Json(_) => "json",
            CaptureFrom::Regex { .. } => "regex",
            CaptureFrom::Header(_) => "header",
            CaptureFrom::Cookie(_) => "cookie",
        }
    }

    /// What it reads, as written (`/accessToken`, the pattern, the header or cookie name).
    pub fn what(&self) -> &str {
        match self {
            CaptureFrom::Json(p) | CaptureFrom::Header(p) | CaptureFrom::Cookie(p) => p,
            CaptureFrom::Regex { re, .. } => re.as_str(),
        }
    }
}

impl PartialEq for CaptureFrom {
    fn eq(&self, o: &Self) -> bool {
        match (self, o) {
            (CaptureFrom::Regex { re: a, group: g }, CaptureFrom::Regex { re: b, group: h }) => {
                a.as_str() == b.as_str() && g == h
            }
            (a, b) => a.kind() == b.kind() && a.what() == b.what(),
        }
    }
}

/// A value a request saves from its response into its user's variables.
#[derive(Debug, Clone, PartialEq)]
pub struct Capture {
    /// The variable (its index in [`Journey::vars`]).
    pub var: u16,
    /// Where the value comes from.
    pub from: CaptureFrom,
}

/// What a request of a journey does beyond its bytes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Step {
    /// Runs once when a user starts, before its loop (`once = true`: a login).
    pub once: bool,
    /// The user's think time after this step's response, ns (`think = "500ms"`); `None`: the
    /// run's `--think-time`.
    pub think_ns: Option<u64>,
    /// The variables its templates read (bit `k`: variable `k`): it is skipped while its user
    /// has not got them all.
    pub needs: u64,
}

/// The state a file keeps per user.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Journey {
    /// Variable names, by index (`{var.NAME}`).
    pub vars: Vec<String>,
    /// A cookie jar per user (`cookies = true`; on by default in a journey).
    pub cookies: bool,
    /// The `once` steps, entry indexes in the order they run.
    pub once: Vec<u32>,
    /// The steps of the loop, entry indexes in the order a sequence walks them (every entry
    /// that is not `once`).
    pub steps: Vec<u32>,
    /// The variables the once steps capture (bit `k`: variable `k`): a user lacking one
    /// failed its login, and starts over.
    pub once_captures: u64,
}

impl Journey {
    /// Whether users keep state: variables, cookies, once steps or think times per step. A
    /// file without any of these runs as before, with no per-user state.
    pub fn is_active(&self, think_per_step: bool) -> bool {
        !self.vars.is_empty() || self.cookies || !self.once.is_empty() || think_per_step
    }
}

/// The variables `parts` read, as a bitmask.
pub fn needs_of<'a>(parts: impl IntoIterator<Item = &'a super::workload::Part>) -> u64 {
    let mut m = 0;
    for p in parts {
        super::workload::each_part(std::slice::from_ref(p), &mut |p| {
            if let super::workload::Part::Var(k) = p {
                m |= 1u64 << *k;
            }
        });
    }
    m
}

/// A simple JSON path (`$.data.token`, `$.items[0].id`, `$['a b']`) as a JSON pointer
/// (`/data/token`), or why it is not one this reads (no wildcards, filters or slices).
pub fn json_path_to_pointer(path: &str) -> Result<String, String> {
    let rest = path.strip_prefix('$').ok_or_else(|| {
        format!("`{path}` starts with neither `/` (a JSON pointer) nor `$` (a JSON path)")
    })?;
    let mut out = String::new();
    let mut s = rest;
    let push = |out: &mut String, key: &str| {
        out.push('/');
        out.push_str(&key.replace('~', "~0").replace('/', "~1"));
    };
    while !s.is_empty() {
        if let Some(r) = s.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..end];
            if key.is_empty() || key == "*" {
                return Err(format!(
                    "`{path}`: `.{key}` is not a key (wildcards and `..` are not read)"
                ));
            }
            push(&mut out, key);
            s = &r[end..];
        } else if let Some(r) = s.strip_prefix('[') {
            let end = r
                .find(']')
                .ok_or_else(|| format!("`{path}`: a `[` that never closes"))?;
            let inner = r[..end].trim();
            let key = if let Some(q) = inner
                .strip_prefix('\'')
                .and_then(|q| q.strip_suffix('\''))
                .or_else(|| inner.strip_prefix('"').and_then(|q| q.strip_suffix('"')))
            {
                q
            } else if !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit()) {
                inner
            } else {
                return Err(format!(
                    "`{path}`: `[{inner}]` is neither an index nor a quoted key (wildcards, filters and slices are not read)"
                ));
            };
            push(&mut out, key);
            s = &r[end + 1..];
        } else {
            return Err(format!(
                "`{path}`: expected `.key` or `[index]` after `{}`",
                &path[..path.len() - s.len()]
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_json_paths_become_pointers() {
        for (path, pointer) in [
            ("$", ""),
            ("$.accessToken", "/accessToken"),
            ("$.data.items[0].id", "/data/items/0/id"),
            ("$['a b'].c", "/a b/c"),
            ("$[\"x/y\"]", "/x~1y"),
            ("$.a~b", "/a~0b"),
        ] {
            assert_eq!(json_path_to_pointer(path).unwrap(), pointer, "{path}");
        }
        for bad in [
            "token",
            "$..a",
            "$.*",
            "$[*]",
            "$[0:2]",
            "$[?(@.a)]",
            "$.a[",
            "$x",
        ] {
            assert!(json_path_to_pointer(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn needs_are_the_variables_read() {
        use super::super::workload::Part;
        let parts = [
            Part::Lit(b"/".to_vec()),
            Part::Var(0),
            Part::Seq,
            Part::Var(5),
        ];
        assert_eq!(needs_of(&parts), 0b100001);
        assert_eq!(needs_of(&[]), 0);
    }
}
