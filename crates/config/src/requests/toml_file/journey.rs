//! A journey's keys in the requests file (docs/contract.md, "Journeys"): `capture`, `once`
//! and `think` of a `[[request]]`, the top-level `cookies`; and the checks that the journey
//! can run — every `{var.NAME}` captured somewhere, once steps fed by earlier once steps,
//! a loop whose first step can go.

use super::reader::a_type;
use super::*;
use volley_plan::journey::{
    json_path_to_pointer, needs_of, Capture, CaptureFrom, Journey, Step, MAX_VARS,
};

/// Keys of one capture's table.
const CAPTURE_KEYS: &[&str] = &["json", "regex", "group", "header", "cookie"];

/// The kinds a capture reads from (one per capture).
const FROM_KEYS: &[&str] = &["json", "regex", "header", "cookie"];

/// The variables the requests capture, in order of first appearance (a later request may
/// capture the same name again: the user keeps the newest value).
pub(super) fn variables(r: &Reader, tables: &[&Val]) -> Result<Vec<String>, RequestsError> {
    let mut vars: Vec<String> = Vec::new();
    for (i, tv) in tables.iter().enumerate() {
        let DeValue::Table(t) = tv.get_ref() else {
            continue; // reported when the request is read
        };
        let Some(cv) = t.get("capture") else { continue };
        let at = format!("[[request]] {}", i + 1);
        let DeValue::Table(ct) = cv.get_ref() else {
            return Err(r.wrong_type(
                cv,
                &at,
                "capture",
                "a table { NAME = { json = \"/token\" } }",
            ));
        };
        for (k, _) in ct.iter() {
            let name = k.get_ref().as_ref();
            let ok = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !ok {
                return Err(r.src.err(
                    k.span().start,
                    Some("capture"),
                    format!("{at}: capture: `{name}` is not a variable name (letters, digits, `_` and `-`, from a letter or `_`)"),
                ));
            }
            if !vars.iter().any(|v| v == name) {
                if vars.len() == MAX_VARS {
                    return Err(r.src.err(
                        k.span().start,
                        Some("capture"),
                        format!("{at}: capture: `{name}` would be variable {}: a file captures at most {MAX_VARS}", MAX_VARS + 1),
                    ));
                }
                vars.push(name.to_string());
            }
        }
    }
    Ok(vars)
}

impl Requests<'_, '_> {
    /// `capture = { NAME = { json = "/a/b" }, … }`: what the request saves from its response.
    pub(super) fn captures(&self, t: &DeTable, at: &str) -> Result<Vec<Capture>, RequestsError> {
        let r = self.r;
        let Some(cv) = t.get("capture") else {
            return Ok(Vec::new());
        };
        let DeValue::Table(ct) = cv.get_ref() else {
            return Err(r.wrong_type(cv, at, "capture", "a table"));
        };
        let mut out = Vec::new();
        for (k, v) in ct.iter() {
            let name = k.get_ref().as_ref();
            let key = format!("capture.{name}");
            let var = self
                .vars
                .iter()
                .position(|x| x == name)
                .expect("collected first") as u16;
            out.push(Capture {
                var,
                from: self.capture_from(v, at, &key)?,
            });
        }
        Ok(out)
    }

    /// One capture's table: exactly one of `json`, `regex` (with `group`), `header`, `cookie`.
    fn capture_from(&self, v: &Val, at: &str, key: &str) -> Result<CaptureFrom, RequestsError> {
        let r = self.r;
        let shape = "a table with one of json = \"/pointer\" or \"$.path\", regex = \"…\" (and group = N), header = \"Name\", cookie = \"name\"";
        let DeValue::Table(t) = v.get_ref() else {
            return Err(r.src.err(
                v.span().start,
                Some(key),
                format!(
                    "{at}: {key}: must be {shape}, not {}",
                    a_type(v.get_ref().type_str())
                ),
            ));
        };
        r.known(t, CAPTURE_KEYS, &format!("{at}: {key}"))?;
        let given: Vec<(&str, &Val)> = FROM_KEYS
            .iter()
            .filter_map(|k| t.get(*k).map(|x| (*k, x)))
            .collect();
        let (kind, kv) = match given[..] {
            [one] => one,
            [] => {
                return Err(r.src.err(
                    v.span().start,
                    Some(key),
                    format!("{at}: {key}: says nothing to capture: {shape}"),
                ))
            }
            [(a, _), (b, bv), ..] => {
                return Err(r.src.err(
                    bv.span().start,
                    Some(key),
                    format!(
                        "{at}: {key}: `{b}` cannot be combined with `{a}` (one value per variable)"
                    ),
                ))
            }
        };
        let text = r.str(kv, at, &format!("{key}.{kind}"))?;
        let bad = |m: String| {
            r.src.err(
                kv.span().start,
                Some(key),
                format!("{at}: {key}.{kind}: {m}"),
            )
        };
        if kind != "regex" {
            if let Some(g) = t.get("group") {
                return Err(r.src.err(
                    g.span().start,
                    Some(key),
                    format!("{at}: {key}.group: only a regex has groups"),
                ));
            }
        }
        Ok(match kind {
            "json" if text.is_empty() || text.starts_with('/') => {
                CaptureFrom::Json(text.to_string())
            }
            "json" => CaptureFrom::Json(json_path_to_pointer(text).map_err(bad)?),
            "regex" => {
                let re = checks::regex(text).map_err(bad)?;
                let group = match t.get("group") {
                    Some(g) => r.int(g, at, &format!("{key}.group"))?,
                    None => i64::from(re.captures_len() > 1),
                };
                if group < 0 || group as usize >= re.captures_len() {
                    return Err(bad(format!(
                        "group {group}: the regex has groups 0 to {}",
                        re.captures_len() - 1
                    )));
                }
                CaptureFrom::Regex {
                    re,
                    group: group as usize,
                }
            }
            "header" => {
                check_header_name(text).map_err(bad)?;
                CaptureFrom::Header(text.to_ascii_lowercase())
            }
            _ => {
                if text.is_empty() || text.contains(['=', ';', ' ']) {
                    return Err(bad(format!("`{text}` is not a cookie name")));
                }
                CaptureFrom::Cookie(text.to_string())
            }
        })
    }

    /// `once = true` and `think = "500ms"`.
    pub(super) fn step(&self, t: &DeTable, at: &str) -> Result<Step, RequestsError> {
        let r = self.r;
        let once = match t.get("once") {
            Some(v) => match v.get_ref() {
                DeValue::Boolean(b) => *b,
                _ => return Err(r.wrong_type(v, at, "once", "true or false")),
            },
            None => false,
        };
        let think_ns = match t.get("think") {
            Some(v) => {
                let s = r.str(v, at, "think")?;
                let d = volley_model::units::parse_duration(s)
                    .map_err(|m| r.at(v, at, "think", format!("`{s}`: {m}")))?;
                Some(d.as_nanos() as u64)
            }
            None => None,
        };
        Ok(Step {
            once,
            think_ns,
            needs: 0,
        })
    }
}

/// The variables `e`'s templates read (its path, header values and inline body).
pub(super) fn needs(e: &Entry) -> u64 {
    let body = match &e.body {
        Body::Template(t) => needs_of(&t.parts),
        _ => 0,
    };
    needs_of(&e.path.parts) | e.headers.iter().fold(0, |m, (_, v)| m | needs_of(&v.parts)) | body
}

/// The file's journey once its order is known (`read` in walk order), checked: a once step's
/// values come from earlier once steps, the loop can start, a body is read only where there
/// is one. `cookies` is the top-level key (default: on when the file captures or has once
/// steps).
pub(super) fn journey(
    r: &Reader,
    read: &mut [Request],
    vars: Vec<String>,
    cookies: Option<bool>,
) -> Result<Journey, RequestsError> {
    let mut once = Vec::new();
    let mut steps = Vec::new();
    let mut have = 0u64; // captured by the once steps so far
    for (k, q) in read.iter_mut().enumerate() {
        q.entry.step.needs = needs(&q.entry);
        let e = &q.entry;
        let n = q.number;
        if e.method == "HEAD" && e.checks.captures.iter().any(|c| c.from.reads_body()) {
            return Err(r.src.err(q.table.start, Some("capture"), format!(
                "[[request]] {n}: capture: a HEAD request's response has no body to capture from (capture a header, or use GET)"
            )));
        }
        if !e.step.once {
            steps.push(k as u32);
            continue;
        }
        if let Some(v) = missing(e.step.needs & !have, &vars) {
            return Err(r.src.err(q.table.start, Some("once"), format!(
                "[[request]] {n}: `{{var.{v}}}` is captured by no once step before it (once steps run in order when a user starts, before its loop)"
            )));
        }
        have |= e.checks.captures.iter().fold(0, |m, c| m | 1 << c.var);
        once.push(k as u32);
    }
    if steps.is_empty() {
        return Err(r.src.err(
            read[0].table.start,
            Some("once"),
            "every request is `once = true`: a journey needs a step to repeat after them".into(),
        ));
    }
    let first = &read[steps[0] as usize];
    let sequence = first.sequence.is_some();
    let can_start = |q: &Request| q.entry.step.needs & !have == 0;
    if sequence && !can_start(first)
        || !sequence && !steps.iter().any(|&k| can_start(&read[k as usize]))
    {
        let v = missing(first.entry.step.needs & !have, &vars).unwrap_or_default();
        let what = if sequence {
            format!(
                "its first step, [[request]] {}, needs `{{var.{v}}}`",
                first.number
            )
        } else {
            "every request of the mix needs a variable".to_string()
        };
        return Err(r.src.err(first.table.start, Some("capture"), format!(
            "the journey can never start: {what}, which no once step captures (mark the request that captures it `once = true`, or put it first)"
        )));
    }
    never_sent(r, read, &steps, have, &vars)?;
    let captures = !vars.is_empty();
    let cookies = cookies.unwrap_or(captures || !once.is_empty());
    for &k in &once {
        // A once step is not part of the loop or the mix.
        read[k as usize].entry.weight = 0;
    }
    for q in read.iter_mut() {
        q.entry.checks.set_cookies = cookies;
    }
    Ok(Journey {
        vars,
        cookies,
        once_captures: have,
        once,
        steps: if read.iter().any(|q| q.entry.step.once) {
            steps
        } else {
            Vec::new()
        },
    })
}

/// Refuses a loop step that could never be sent: the values it needs are captured by no
/// step that can itself go (starting from what the once steps capture, each step that can go
/// adds its captures, until nothing changes).
fn never_sent(
    r: &Reader,
    read: &[Request],
    steps: &[u32],
    once: u64,
    vars: &[String],
) -> Result<(), RequestsError> {
    let captures = |q: &Request| {
        q.entry
            .checks
            .captures
            .iter()
            .fold(0u64, |m, c| m | 1 << c.var)
    };
    let mut have = once;
    loop {
        let more = steps.iter().fold(have, |m, &k| {
            let q = &read[k as usize];
            if q.entry.step.needs & !m == 0 {
                m | captures(q)
            } else {
                m
            }
        });
        if more == have {
            break;
        }
        have = more;
    }
    for &k in steps {
        let q = &read[k as usize];
        if let Some(v) = missing(q.entry.step.needs & !have, vars) {
            return Err(r.src.err(q.table.start, Some("capture"), format!(
                "[[request]] {}: can never be sent: `{{var.{v}}}` is captured only by steps that need it first (or by none that can go)",
                q.number
            )));
        }
    }
    Ok(())
}

/// The name of the lowest variable in `mask`.
fn missing(mask: u64, vars: &[String]) -> Option<String> {
    (mask != 0).then(|| vars[mask.trailing_zeros() as usize].clone())
}
