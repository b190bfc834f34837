//! One `[[request]]` table of a TOML requests file: its keys checked and turned into a
//! `plan::workload::Entry` (method, path or url, headers, body, weight or sequence, name,
//! checks), the names counted against the cap.

use super::reader::{a_type, describe_byte};
use super::*;

/// A request as read, before the order of the file is known.
pub(super) struct Request {
    pub(super) entry: Entry,
    /// `weight` as written and where, when given.
    pub(super) weight: Option<(f64, Range<usize>)>,
    /// `sequence` and where, when given.
    pub(super) sequence: Option<(i64, Range<usize>)>,
    /// Where the request's table is.
    pub(super) table: Range<usize>,
    /// Its number in the file (1-based, as messages name it).
    pub(super) number: usize,
}

/// The distinct names of the requests, in order of first appearance.
#[derive(Default)]
pub(super) struct Names {
    pub(super) list: Vec<String>,
    pub(super) index: HashMap<String, u16>,
}

/// What reading the requests shares.
pub(super) struct Requests<'r, 's> {
    pub(super) r: &'r Reader<'s, 's>,
    pub(super) run: Run<'r>,
    /// The data file's rows and its name as written.
    pub(super) data: Option<(&'r Data, &'r str)>,
    pub(super) names: Names,
    /// Columns whose values were checked for a path (`true`) or a header value (`false`).
    pub(super) rows_checked: HashSet<(usize, bool)>,
    /// Generated bodies by size, built once.
    pub(super) bodies: HashMap<u64, Arc<[u8]>>,
    /// The variables the file captures (`{var.NAME}`).
    pub(super) vars: Vec<String>,
}

impl Requests<'_, '_> {
    /// `[[request]]` number `i` (0-based), at `tv`.
    pub(super) fn request(
        &mut self,
        i: usize,
        tv: &Val,
        hash: &mut Sha256,
    ) -> Result<Request, RequestsError> {
        let r = self.r;
        let at = format!("[[request]] {}", i + 1);
        let at = at.as_str();
        let t = r.table(tv, at, "request")?;
        r.known(t, REQUEST_KEYS, at)?;
        let message = self.ws_message(t, at, i + 1)?;
        let mut endpoint = match (&message, t.get("name")) {
            (Some(named), _) => *named,
            (None, Some(v)) => Some(self.name(v, at)?),
            (None, None) => None,
        };
        let call = self.grpc_call(t, tv, at, hash)?;
        let path = match &call {
            Some((method, _, _)) => Template::literal(format!("/{method}")),
            None if message.is_some() => Template::literal(self.run.target.path.clone()),
            None => self.path(t, tv, at)?,
        };
        let headers = match t.get("headers") {
            Some(v) => self.headers(v, at)?,
            None => Vec::new(),
        };
        let (body, reply) = match call {
            Some((method, body, reply)) => {
                endpoint = endpoint.or_else(|| self.intern(&method));
                (Some(body), Some(reply))
            }
            None => (self.body(t, at, hash)?, None),
        };
        let method = match t.get("method") {
            Some(v) => {
                let m = r.str(v, at, "method")?;
                if m.is_empty() || !m.bytes().all(crate::request::is_token_byte) {
                    return Err(r.src.err(
                        v.span().start,
                        Some("method"),
                        format!("{at}: method: `{m}` is not an HTTP method"),
                    ));
                }
                m.to_string()
            }
            // A WebSocket's message goes on the connection its GET upgraded.
            None if message.is_some() => "GET".to_string(),
            None => default_method(body.is_some()),
        };
        let mut own = self.checks(t, at)?;
        // A call's reply is read as JSON through its method's descriptor.
        own.reply = reply;
        own.captures = self.captures(t, at)?;
        let step = self.step(t, at)?;
        if let (true, Some(w)) = (step.once, t.get("weight")) {
            return Err(r.src.err(
                w.span().start,
                Some("weight"),
                format!("{at}: weight: a `once` step runs once per user, before the mix: it has no weight"),
            ));
        }
        let weight = match t.get("weight") {
            Some(v) => Some((r.weight(v, at)?, v.span())),
            None => None,
        };
        let sequence = match t.get("sequence") {
            Some(v) => {
                if let Some(w) = t.get("weight") {
                    return Err(r.src.err(
                        w.span().start,
                        Some("weight"),
                        format!("{at}: weight: cannot be combined with `sequence` (a sequence is walked in order, not mixed by weight)"),
                    ));
                }
                Some((r.int(v, at, "sequence")?, v.span()))
            }
            None => None,
        };
        Ok(Request {
            entry: Entry {
                endpoint,
                method,
                path,
                headers,
                body: body.unwrap_or(Body::None),
                weight: 0,
                checks: self.run.checks.and(&own),
                step,
            },
            weight,
            sequence,
            table: tv.span(),
            number: i + 1,
        })
    }

    /// `name`: its endpoint, a new one for a name not seen before (at most
    /// [`MAX_ENDPOINTS`]).
    pub(super) fn name(&mut self, v: &Val, at: &str) -> Result<u16, RequestsError> {
        let r = self.r;
        let name = r.str(v, at, "name")?;
        let bad = |m: String| {
            r.src
                .err(v.span().start, Some("name"), format!("{at}: name: {m}"))
        };
        if name.is_empty() {
            return Err(bad(
                "empty (leave `name` out to name the request by its method and path)".into(),
            ));
        }
        if name.chars().any(char::is_control) {
            return Err(bad(format!("{name:?} holds a control character")));
        }
        self.intern(name).ok_or_else(|| {
            bad(format!(
                "`{name}` would be the {}st name: at most {MAX_ENDPOINTS} names have results of their own (reuse a name, or leave `name` out: unnamed requests are named `METHOD path` in the places left, and `other` past them)",
                MAX_ENDPOINTS + 1
            ))
        })
    }

    /// `name`'s endpoint, a new one for a name not seen before; `None` past [`MAX_ENDPOINTS`]
    /// names.
    pub(super) fn intern(&mut self, name: &str) -> Option<u16> {
        if let Some(&k) = self.names.index.get(name) {
            return Some(k);
        }
        if self.names.list.len() == MAX_ENDPOINTS {
            return None;
        }
        let k = self.names.list.len() as u16;
        self.names.list.push(name.to_string());
        self.names.index.insert(name.to_string(), k);
        Some(k)
    }

    /// `path = "/…"` or `url = "http://HOST:PORT/…"` (the run's scheme, host and port): one of
    /// them, templated.
    pub(super) fn path(
        &mut self,
        t: &DeTable,
        tv: &Val,
        at: &str,
    ) -> Result<Template, RequestsError> {
        let r = self.r;
        let (key, v) = match (t.get("path"), t.get("url")) {
            (Some(_), Some(u)) => {
                return Err(r.src.err(
                    u.span().start,
                    Some("url"),
                    format!("{at}: url: cannot be combined with `path` (one says where the request goes)"),
                ))
            }
            (None, None) => {
                return Err(r.src.err(
                    tv.span().start,
                    Some("path"),
                    format!("{at}: missing `path = \"/…\"` (or `url = \"http://HOST:PORT/…\"` on the run's host)"),
                ))
            }
            (Some(p), None) => ("path", p),
            (None, Some(u)) => ("url", u),
        };
        let text = r.str(v, at, key)?;
        let bad = |m: String| {
            r.src
                .err(v.span().start, Some(key), format!("{at}: {key}: {m}"))
        };
        let path = if key == "url" {
            path_of_url(text, self.run.target).map_err(|m| {
                bad(format!(
                    "{m} (write `path = \"/…\"`, which a suite needs too: its harness picks the server's address)"
                ))
            })?
        } else {
            if !text.starts_with('/') {
                return Err(bad(format!(
                    "`{text}` does not start with `/` (the URL names the host; the file names the paths)"
                )));
            }
            text.to_string()
        };
        let tpl = self.template(v, &path, at, key)?;
        if let Some(b) = bad_literal(&tpl, bad_in_path) {
            return Err(bad(format!(
                "holds {} (percent-encode it)",
                describe_byte(b)
            )));
        }
        self.check_rows(&tpl, true, v, at, key)?;
        Ok(tpl)
    }

    /// `headers`: a table `{ Name = "value" }`, a list `["Name: value"]`, or one such string.
    pub(super) fn headers(
        &mut self,
        v: &Val,
        at: &str,
    ) -> Result<Vec<(String, Template)>, RequestsError> {
        let r = self.r;
        let key = "headers";
        let mut out = Vec::new();
        match v.get_ref() {
            DeValue::Table(t) => {
                for (k, hv) in t.iter() {
                    let name = k.get_ref();
                    check_header_name(name).map_err(|m| {
                        r.src.err(k.span().start, Some(key), format!("{at}: headers: {m}"))
                    })?;
                    let value = r.str(hv, at, &format!("headers.{name}"))?;
                    out.push((name.to_string(), self.header_value(hv, value, at)?));
                }
            }
            DeValue::String(_) | DeValue::Array(_) => {
                let items = match v.get_ref() {
                    DeValue::Array(a) => a.iter().collect(),
                    _ => vec![v],
                };
                for hv in items {
                    let text = r.str(hv, at, key)?;
                    let bad =
                        |m: String| r.src.err(hv.span().start, Some(key), format!("{at}: headers: {m}"));
                    let (name, value) = text
                        .split_once(':')
                        .ok_or_else(|| bad(format!("`{}` is not \"Name: value\"", first_word(text))))?;
                    let name = name.trim();
                    check_header_name(name).map_err(bad)?;
                    out.push((name.to_string(), self.header_value(hv, value.trim(), at)?));
                }
            }
            other => {
                return Err(r.src.err(
                    v.span().start,
                    Some(key),
                    format!(
                        "{at}: headers: must be a table {{ Name = \"value\" }} or a list [\"Name: value\"], not {}",
                        a_type(other.type_str())
                    ),
                ))
            }
        }
        Ok(out)
    }

    /// A header's value (at `v`), templated.
    pub(super) fn header_value(
        &mut self,
        v: &Val,
        value: &str,
        at: &str,
    ) -> Result<Template, RequestsError> {
        let key = "headers";
        let tpl = self.template(v, value, at, key)?;
        if bad_literal(&tpl, bad_in_header).is_some() {
            return Err(self.r.src.err(
                v.span().start,
                Some(key),
                format!("{at}: headers: a value holds a line break"),
            ));
        }
        self.check_rows(&tpl, false, v, at, key)?;
        Ok(tpl)
    }

    /// The body of `body` (templated), `body_file` (its bytes) or `body_size` (generated), at
    /// most one of them; `None` without.
    pub(super) fn body(
        &mut self,
        t: &DeTable,
        at: &str,
        hash: &mut Sha256,
    ) -> Result<Option<Body>, RequestsError> {
        let r = self.r;
        let given: Vec<(&str, &Val)> = BODY_KEYS
            .iter()
            .filter_map(|k| t.get(*k).map(|v| (*k, v)))
            .collect();
        if let [(first, _), (second, v), ..] = given[..] {
            return Err(r.src.err(
                v.span().start,
                Some(second),
                format!("{at}: {second}: cannot be combined with `{first}` (one body per request)"),
            ));
        }
        let Some(&(key, v)) = given.first() else {
            return Ok(None);
        };
        let bad = |m: String| {
            r.src
                .err(v.span().start, Some(key), format!("{at}: {key}: {m}"))
        };
        let body = match key {
            "body" => {
                let tpl = self.template(v, r.str(v, at, key)?, at, key)?;
                match tpl.literal_bytes() {
                    Some(b) => Body::Bytes(b.into()),
                    None => Body::Template(tpl),
                }
            }
            "body_file" => Body::Bytes(self.r.src.read(r.str(v, at, key)?, hash).map_err(bad)?),
            _ => {
                let n = r.size(v, at, key)?;
                if n > MAX_BODY_BYTES {
                    return Err(bad(format!(
                        "{n} bytes is more than the 1 GiB volley holds in memory"
                    )));
                }
                Body::Bytes(
                    self.bodies
                        .entry(n)
                        .or_insert_with(|| generated_body(n as usize).into())
                        .clone(),
                )
            }
        };
        Ok(Some(body))
    }

    /// The request's own `expect_*` checks.
    pub(super) fn checks(&self, t: &DeTable, at: &str) -> Result<Checks, RequestsError> {
        let r = self.r;
        let mut c = Checks::default();
        if let Some(v) = t.get("expect_status") {
            c.status = r.status(v, at)?;
        }
        if let Some(v) = t.get("expect_body_contains") {
            let key = "expect_body_contains";
            for (s, sv) in r.strings(v, at, key)? {
                c.body_contains
                    .push(checks::body_text(s).map_err(|m| r.at(sv, at, key, m))?);
            }
        }
        if let Some(v) = t.get("expect_body_regex") {
            let key = "expect_body_regex";
            let s = r.str(v, at, key)?;
            c.body_regex = Some(checks::regex(s).map_err(|m| r.at(v, at, key, m))?);
        }
        if let Some(v) = t.get("expect_header") {
            let key = "expect_header";
            for (s, sv) in r.strings(v, at, key)? {
                c.headers
                    .push(checks::header(s).map_err(|m| r.at(sv, at, key, m))?);
            }
        }
        if let Some(v) = t.get("expect_size") {
            c.size = Some(r.size(v, at, "expect_size")?);
        }
        if let Some(v) = t.get("expect_json") {
            let key = "expect_json";
            for (s, sv) in r.strings(v, at, key)? {
                c.json
                    .push(checks::json(s).map_err(|m| r.at(sv, at, key, m))?);
            }
        }
        Ok(c)
    }

    /// `text` (the value at `v`, or the path of its URL) as a template; an error points at
    /// the placeholder when it can be found in the file.
    pub(super) fn template(
        &self,
        v: &Val,
        text: &str,
        at: &str,
        key: &str,
    ) -> Result<Template, RequestsError> {
        let columns = self.data.map(|(d, file)| Columns {
            file,
            names: &d.columns,
        });
        template::parse(text, columns, &self.vars).map_err(|e| {
            let offset = self.r.find(v, &e.written);
            self.r
                .src
                .err(offset, Some(key), format!("{at}: {key}: {}", e.message))
        })
    }

    /// Refuses a `{row.COLUMN}` of `tpl` whose values cannot go where it is: in a path, a space
    /// or control character; in a header value, a line break. Each column is checked once.
    pub(super) fn check_rows(
        &mut self,
        tpl: &Template,
        in_path: bool,
        v: &Val,
        at: &str,
        key: &str,
    ) -> Result<(), RequestsError> {
        let Some((d, file)) = self.data else {
            return Ok(());
        };
        for col in tpl.columns() {
            if !self.rows_checked.insert((col, in_path)) {
                continue;
            }
            let (bad, what): (fn(u8) -> bool, &str) = if in_path {
                (
                    bad_in_path,
                    "a space or control character, which cannot go in a path as it is (volley sends values as the file has them: percent-encode them there)",
                )
            } else {
                (bad_in_header, "a line break, which would end the header")
            };
            if let Some(row) = data::first_bad_row(d, col, bad) {
                let column = &d.columns[col];
                let written = format!("{{row.{column}}}");
                let offset = self.r.find(v, &written);
                return Err(self.r.src.err(
                    offset,
                    Some(key),
                    format!("{at}: {key}: `{written}`: row {row} of {file} holds {what}"),
                ));
            }
        }
        Ok(())
    }
}
