//! A workload beyond one URL (`--requests-file`): a list of requests, mixed by weight or walked
//! in sequence, each with its own method, path, headers and body, where values may be templated
//! (`{seq}`, `{rand:1..10000}`, `{uuid}`, `{row.COLUMN}`, `{conn}`, `{user}`), and each with the
//! checks its responses must pass. Pure: which request goes next and its bytes are decided
//! here; the engine only copies them (docs/contract.md, "Workloads", also for what templating
//! cannot do by design). No interpreter runs per request: a request is a list of byte segments,
//! literal or one of the placeholders above, and rendering it is a copy of the literals and a
//! few integers formatted into the connection's buffer.

use std::fmt::Write as _;
use std::sync::Arc;

/// A placeholder or a literal run of bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Bytes as written (`{{` and `}}` already unescaped).
    Lit(Vec<u8>),
    /// `{seq}`: the request's index (0, 1, 2, … over the whole run; no shared counter).
    Seq,
    /// `{rand:LO..HI}`: an integer in LO..=HI, from the run's seed and the request's index.
    Rand {
        /// Smallest value.
        lo: u64,
        /// Largest value.
        hi: u64,
    },
    /// `{uuid}`: a version-4 UUID from the run's seed and the request's index.
    Uuid,
    /// `{row.COLUMN}`: the column (its index in the data file) of the request's row.
    Row(usize),
    /// `{conn}`: the connection's number within the run (0-based).
    Conn,
    /// `{user}`: the virtual user's number (the connection's, without `--users`).
    User,
    /// `{var.NAME}`: a value the user captured from an earlier response (its index in
    /// [`crate::journey::Journey::vars`]).
    Var(u16),
    /// Parts behind a length prefix written once they are rendered: a templated gRPC message
    /// (its 5-byte prefix) and, inside it, each length-delimited protobuf field that holds a
    /// placeholder (a varint). A message is encoded once per template; a request only fills
    /// in its values and the lengths around them.
    Framed {
        /// How the length is written.
        prefix: Prefix,
        /// What it frames.
        parts: Vec<Part>,
    },
}

/// The length prefix of [`Part::Framed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefix {
    /// Protobuf's varint (a length-delimited field's length).
    Varint,
    /// gRPC's message prefix: a compressed flag (0) and a big-endian `u32`.
    Grpc,
}

impl Prefix {
    /// The prefix of `len` bytes: its bytes (the first of them) and how many.
    fn bytes(self, len: usize) -> ([u8; 10], usize) {
        let mut b = [0u8; 10];
        match self {
            Prefix::Grpc => {
                b[1..5].copy_from_slice(&(len as u32).to_be_bytes());
                (b, 5)
            }
            Prefix::Varint => {
                let (mut v, mut n) = (len as u64, 0);
                while v >= 0x80 {
                    b[n] = (v as u8) | 0x80;
                    v >>= 7;
                    n += 1;
                }
                b[n] = v as u8;
                (b, n + 1)
            }
        }
    }
}

/// Text with placeholders, parsed once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Template {
    /// Its parts in order.
    pub parts: Vec<Part>,
}

impl Template {
    /// A template of literal text only.
    pub fn literal(text: impl Into<Vec<u8>>) -> Self {
        Template {
            parts: vec![Part::Lit(text.into())],
        }
    }

    /// No placeholder: the same bytes for every request.
    pub fn is_literal(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Lit(_)))
    }

    /// Its bytes when it has no placeholder.
    pub fn literal_bytes(&self) -> Option<Vec<u8>> {
        self.is_literal().then(|| {
            self.parts
                .iter()
                .flat_map(|p| match p {
                    Part::Lit(b) => b.clone(),
                    _ => Vec::new(),
                })
                .collect()
        })
    }

    /// The text as written, placeholders included (`/items/{seq}`); `columns` names the data
    /// file's columns for `{row.NAME}`.
    pub fn text(&self, columns: &[String]) -> String {
        self.text_with(columns, &[])
    }

    /// [`Template::text`], with `vars` naming the journey's variables for `{var.NAME}`.
    pub fn text_with(&self, columns: &[String], vars: &[String]) -> String {
        let mut s = String::new();
        text_of(&self.parts, columns, vars, &mut s);
        s
    }

    /// The columns of the data file it reads.
    pub fn columns(&self) -> impl Iterator<Item = usize> + '_ {
        let mut found = Vec::new();
        each_part(&self.parts, &mut |p| {
            if let Part::Row(c) = p {
                found.push(*c);
            }
        });
        found.into_iter()
    }

    /// Appends its bytes for request `ctx` to `out`.
    pub fn render(&self, ctx: &Context, out: &mut Vec<u8>) {
        render_parts(&self.parts, ctx, 0, out);
    }
}

/// Calls `f` on each of `parts`, and on the parts a [`Part::Framed`] holds.
pub fn each_part<'a>(parts: &'a [Part], f: &mut impl FnMut(&'a Part)) {
    for p in parts {
        f(p);
        if let Part::Framed { parts, .. } = p {
            each_part(parts, f);
        }
    }
}

/// [`Template::text_with`] of `parts` into `s`; a framed part shows what it frames.
fn text_of(parts: &[Part], columns: &[String], vars: &[String], s: &mut String) {
    for p in parts {
        match p {
            Part::Lit(b) => s.push_str(
                &String::from_utf8_lossy(b)
                    .replace('{', "{{")
                    .replace('}', "}}"),
            ),
            Part::Seq => s.push_str("{seq}"),
            Part::Rand { lo, hi } => {
                let _ = write!(s, "{{rand:{lo}..{hi}}}");
            }
            Part::Uuid => s.push_str("{uuid}"),
            Part::Row(c) => {
                let name = columns.get(*c).map_or("?", String::as_str);
                let _ = write!(s, "{{row.{name}}}");
            }
            Part::Conn => s.push_str("{conn}"),
            Part::User => s.push_str("{user}"),
            Part::Var(k) => {
                let _ = write!(
                    s,
                    "{{var.{}}}",
                    vars.get(*k as usize).map_or("?", String::as_str)
                );
            }
            Part::Framed { parts, .. } => text_of(parts, columns, vars, s),
        }
    }
}

/// Renders `parts` into `out`; `salt` keeps the random values of nested parts apart from
/// their neighbours'.
fn render_parts(parts: &[Part], ctx: &Context, salt: u64, out: &mut Vec<u8>) {
    for (j, p) in parts.iter().enumerate() {
        let k = salt + j as u64;
        match p {
            Part::Lit(b) => out.extend_from_slice(b),
            Part::Seq => push_u64(out, ctx.index),
            Part::Rand { lo, hi } => {
                let span = hi - lo + 1;
                let r = mix(ctx.seed ^ ctx.index.wrapping_mul(0x9E37_79B9_7F4A_7C15), k);
                // Multiply-shift: unbiased enough for test data, no division.
                let v = lo + ((r as u128 * span as u128) >> 64) as u64;
                push_u64(out, v);
            }
            Part::Uuid => push_uuid(out, ctx, k),
            Part::Row(col) => {
                if let Some(row) = ctx.row {
                    out.extend_from_slice(row.get(*col).map_or(&[][..], |v| v.as_slice()));
                }
            }
            Part::Conn => push_u64(out, ctx.conn),
            Part::User => push_u64(out, ctx.user),
            Part::Var(v) => {
                out.extend_from_slice(ctx.vars.get(*v as usize).map_or(&[][..], Vec::as_slice))
            }
            Part::Framed { prefix, parts } => {
                // The framed bytes go where they belong, then their prefix goes before them:
                // a move of a few bytes of a message (not the hot path of literal requests).
                let start = out.len();
                render_parts(parts, ctx, (k + 1) << 8, out);
                let (head, n) = prefix.bytes(out.len() - start);
                out.splice(start..start, head[..n].iter().copied());
            }
        }
    }
}

/// What a request's placeholders are filled from.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The request's index in the run.
    pub index: u64,
    /// The connection's number within the run.
    pub conn: u64,
    /// The virtual user's number.
    pub user: u64,
    /// The run's seed.
    pub seed: u64,
    /// The request's row of the data file, when the workload has one.
    pub row: Option<&'a [Vec<u8>]>,
    /// The user's variables (`{var.NAME}`), by index; empty outside a journey.
    pub vars: &'a [Vec<u8>],
    /// The `Cookie` header's value from the user's jar, when one applies (a request with a
    /// `Cookie` header of its own sends that instead).
    pub cookie: Option<&'a [u8]>,
}

fn push_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(itoa_buf(v).as_slice());
}

/// Decimal digits of `v` without an allocation per call (a small stack buffer).
struct Digits {
    buf: [u8; 20],
    start: usize,
}

impl Digits {
    fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

fn itoa_buf(mut v: u64) -> Digits {
    let mut buf = [0u8; 20];
    let mut i = 20;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    Digits { buf, start: i }
}

/// SplitMix64 of `a` and `b`: a well-mixed 64-bit value, the same for the same inputs (a
/// resent request renders the same bytes).
pub(crate) fn mix(a: u64, b: u64) -> u64 {
    let mut z = a
        .wrapping_add(b.wrapping_mul(0xBF58_476D_1CE4_E5B9))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn push_uuid(out: &mut Vec<u8>, ctx: &Context, k: u64) {
    let hi = mix(ctx.seed ^ ctx.index, 2 * k + 1);
    let lo = mix(ctx.seed ^ ctx.index, 2 * k + 2);
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&hi.to_be_bytes());
    b[8..].copy_from_slice(&lo.to_be_bytes());
    b[6] = (b[6] & 0x0f) | 0x40; // version 4
    b[8] = (b[8] & 0x3f) | 0x80; // variant RFC 4122
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        let _ = write!(s, "{byte:02x}");
    }
    out.extend_from_slice(s.as_bytes());
}

/// A request's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// No body.
    None,
    /// The same bytes every time (inline without placeholders, a file, a generated size),
    /// shared.
    Bytes(Arc<[u8]>),
    /// Inline text with placeholders.
    Template(Template),
}

/// What a response must be to pass (`--expect-*`, or per request in the file).
#[derive(Debug, Clone, Default)]
pub struct Checks {
    /// Allowed statuses (inclusive ranges); empty: any.
    pub status: Vec<(u16, u16)>,
    /// Substrings the body must contain.
    pub body_contains: Vec<Vec<u8>>,
    /// A pattern the first [`REGEX_WINDOW_BYTES`] of the body must match.
    pub body_regex: Option<regex::bytes::Regex>,
    /// Headers that must be there (`NAME`), or be there with a value (`NAME:VALUE`); names
    /// are lower case.
    pub headers: Vec<(String, Option<String>)>,
    /// The body's length in bytes.
    pub size: Option<u64>,
    /// Values saved from the response into the user's variables (a journey).
    pub captures: Vec<crate::journey::Capture>,
    /// The response's `Set-Cookie` fields are read for the user's jar (a journey's cookies).
    pub set_cookies: bool,
    /// `--grpc`: the call's `grpc-status` (in the trailers, or a trailers-only head) must be
    /// 0, OK; its code is counted either way.
    pub grpc: bool,
    /// Fields the body's JSON must have (`--expect-json`), read from the first
    /// [`REGEX_WINDOW_BYTES`] of the body.
    pub json: Vec<JsonCheck>,
    /// How a body becomes the JSON `json` reads: a gRPC call's reply decoded by its method's
    /// output descriptor; `None`: the body is JSON.
    pub reply: Option<ReplyDecoder>,
}

/// One `--expect-json` check: a field (a JSON pointer) that must be there, and equal a value
/// when one is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonCheck {
    /// The field as an RFC 6901 pointer (`/data/id`; a `$.data.id` path is read as one).
    pub pointer: String,
    /// The value it must have: a string's text, or another value's JSON (`3`, `true`).
    pub equals: Option<String>,
    /// `equals` read as JSON once (`None`: it is not JSON, so only a string's text equals it).
    as_json: Option<serde_json::Value>,
}

impl JsonCheck {
    /// The check of `pointer`, equal to `equals` when given.
    pub fn new(pointer: String, equals: Option<String>) -> Self {
        let as_json = equals.as_deref().and_then(|e| serde_json::from_str(e).ok());
        JsonCheck {
            pointer,
            equals,
            as_json,
        }
    }

    /// Whether `doc` passes.
    pub fn passes(&self, doc: &serde_json::Value) -> bool {
        match (doc.pointer(&self.pointer), &self.equals) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(serde_json::Value::String(s)), Some(want)) => s == want,
            (Some(v), Some(_)) => self.as_json.as_ref() == Some(v),
        }
    }
}

/// What a [`ReplyDecoder`] calls: a body to its JSON, or why it has none.
pub type DecodeFn = dyn Fn(&[u8]) -> Result<serde_json::Value, String> + Send + Sync;

/// A body turned into JSON (a gRPC reply by its descriptor), or why it cannot be.
#[derive(Clone)]
pub struct ReplyDecoder(pub Arc<DecodeFn>);

impl std::fmt::Debug for ReplyDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplyDecoder")
    }
}

impl Checks {
    /// The body's JSON, for the `json` checks: `body` decoded (a gRPC reply), or parsed.
    pub fn body_json(&self, body: &[u8]) -> Result<serde_json::Value, String> {
        match &self.reply {
            Some(d) => (d.0)(body),
            None => serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}")),
        }
    }

    /// Whether `body` passes every `json` check (true without any).
    pub fn json_passes(&self, body: &[u8]) -> bool {
        if self.json.is_empty() {
            return true;
        }
        match self.body_json(body) {
            Ok(doc) => self.json.iter().all(|c| c.passes(&doc)),
            Err(_) => false,
        }
    }
}

/// How much of a body a `body_regex` check sees: the first 64 KiB (a regex over a stream
/// would need the whole body kept; a bounded window keeps memory flat).
pub const REGEX_WINDOW_BYTES: usize = 64 * 1024;

impl PartialEq for Checks {
    fn eq(&self, o: &Self) -> bool {
        self.status == o.status
            && self.body_contains == o.body_contains
            && self.body_regex.as_ref().map(|r| r.as_str())
                == o.body_regex.as_ref().map(|r| r.as_str())
            && self.headers == o.headers
            && self.size == o.size
            && self.captures == o.captures
            && self.set_cookies == o.set_cookies
            && self.grpc == o.grpc
            && self.json == o.json
            && self.reply.is_some() == o.reply.is_some()
    }
}

impl Checks {
    /// No check at all.
    pub fn is_empty(&self) -> bool {
        self.status.is_empty()
            && self.body_contains.is_empty()
            && self.body_regex.is_none()
            && self.headers.is_empty()
            && self.size.is_none()
            && self.captures.is_empty()
            && !self.set_cookies
            && !self.grpc
            && self.json.is_empty()
    }

    /// Whether it declares a check (a capture is one: `capture`): reading `Set-Cookie` for a
    /// jar is not.
    pub fn declares(&self) -> bool {
        !Checks {
            set_cookies: false,
            grpc: false,
            reply: None,
            ..self.clone()
        }
        .is_empty()
    }

    /// Whether a check or capture needs the response's body bytes (contains, regex, a JSON
    /// or regex capture).
    pub fn needs_body(&self) -> bool {
        !self.body_contains.is_empty() || self.body_regex.is_some() || self.body_window()
    }

    /// Whether the body's first [`REGEX_WINDOW_BYTES`] are kept (a regex check, a body
    /// capture).
    pub fn body_window(&self) -> bool {
        self.body_regex.is_some()
            || !self.json.is_empty()
            || self.captures.iter().any(|c| c.from.reads_body())
    }

    /// Whether a check or capture needs the response's headers.
    pub fn needs_headers(&self) -> bool {
        !self.headers.is_empty()
            || self.set_cookies
            || self.grpc
            || self.captures.iter().any(|c| !c.from.reads_body())
    }

    /// `checks` then `more`, both apply (a request's own after the command line's).
    pub fn and(&self, more: &Checks) -> Checks {
        let mut c = self.clone();
        if !more.status.is_empty() {
            c.status = more.status.clone();
        }
        c.body_contains.extend(more.body_contains.iter().cloned());
        if more.body_regex.is_some() {
            c.body_regex = more.body_regex.clone();
        }
        c.headers.extend(more.headers.iter().cloned());
        if more.size.is_some() {
            c.size = more.size;
        }
        c.captures.extend(more.captures.iter().cloned());
        c.set_cookies |= more.set_cookies;
        c.grpc |= more.grpc;
        c.json.extend(more.json.iter().cloned());
        if more.reply.is_some() {
            c.reply = more.reply.clone();
        }
        c
    }

    /// Whether `status` is allowed.
    pub fn status_ok(&self, status: u16) -> bool {
        self.status.is_empty() || self.status.iter().any(|(a, b)| (*a..=*b).contains(&status))
    }
}

/// One request of the workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Its endpoint's index in [`Workload::endpoints`]: its results beside the whole mix's.
    /// Every request read from a file has one (its `name`, else `METHOD path` as written,
    /// else `other` past the cap); `None` counts only in the whole mix.
    pub endpoint: Option<u16>,
    /// The method (`GET`).
    pub method: String,
    /// Path and query, from `/`.
    pub path: Template,
    /// Its own headers (the command line's `-H` come first and are overridden by these).
    pub headers: Vec<(String, Template)>,
    /// Its body.
    pub body: Body,
    /// Share of the mix (whole units after scaling); 0 in a sequence.
    pub weight: u64,
    /// What its responses must be (the command line's checks included), and what they
    /// capture.
    pub checks: Checks,
    /// Its part in a journey (once, think time, the variables it needs).
    pub step: crate::journey::Step,
}

/// How the next request is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// By weight: request `i` of the run takes the `i`-th slot of a smooth weighted cycle, so
    /// every cycle of Σ weights requests holds each request exactly its weight's times.
    Weighted,
    /// Each connection (user) walks the list in order, from the first, again and again.
    Sequence,
}

/// How a data file's rows are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowOrder {
    /// Request `i` takes row `i mod rows`.
    Sequential,
    /// Request `i` takes a row drawn from the run's seed and `i`.
    Random,
}

/// The rows of a data file (`{row.COLUMN}`): values as bytes, columns by index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Data {
    /// Column names, in file order.
    pub columns: Vec<String>,
    /// Rows, each with a value per column.
    pub rows: Vec<Vec<Vec<u8>>>,
    /// How rows are taken.
    pub order: RowOrder,
}

/// The most distinct request names a workload may have (each has its histograms), user names
/// and default names together; the reserved `other` may come beyond it.
pub const MAX_ENDPOINTS: usize = 100;

/// A workload, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Requests in file order (a sequence: in `sequence` order, the order it is walked in).
    pub entries: Vec<Entry>,
    /// How the next one is chosen.
    pub order: Order,
    /// Endpoint names: the distinct `name`s of the requests in order of first appearance,
    /// then the default names (`GET /items/{seq}`) of the unnamed ones, at most
    /// [`MAX_ENDPOINTS`], then `other` when templates came past the cap (at most
    /// [`MAX_ENDPOINTS`] + 1 in all).
    pub endpoints: Vec<String>,
    /// The index of the reserved `other`, when templates past the cap made it (a user's own
    /// `other`, which the overflow joins, is a name like any other: `None`).
    pub other: Option<u16>,
    /// The data file's rows, when a template reads one.
    pub data: Option<Arc<Data>>,
    /// The weighted cycle: entry indexes, Σ weights long (empty in a sequence); `u32`, as a
    /// file may hold more than 65,536 requests.
    pub cycle: Vec<u32>,
    /// Hash of the file's content (and of the data and body files it names), for the load
    /// identity.
    pub hash: String,
    /// The file as given (for messages and reports).
    pub source: String,
    /// The data and body files it read, as found (its folder joined with the name given),
    /// sorted: what must travel with it to another machine (`volley k8s`).
    pub files: Vec<std::path::PathBuf>,
    /// What users keep (variables, cookies, once steps).
    pub journey: crate::journey::Journey,
}

impl Workload {
    /// Fills `cycle` from the entries' weights, spreading each request's turns through the
    /// cycle rather than bunching them: turn `j` of an entry of weight `w` is due at
    /// `(j + ½) / w` of the cycle, and the cycle is every turn in order of that (ties in file
    /// order). Σ weights · log of it, whatever the number of entries (nginx's smooth weighted
    /// round robin costs Σ weights × entries: 10^10 steps for a file of 100,000 requests).
    pub fn build_cycle(&mut self) {
        self.cycle.clear();
        if self.order != Order::Weighted {
            return;
        }
        let total: u64 = self.entries.iter().map(|e| e.weight).sum();
        let mut turns: Vec<(u64, u32)> = Vec::with_capacity(total as usize);
        for (k, e) in self.entries.iter().enumerate() {
            turns.extend((0..e.weight).map(|j| (j, k as u32)));
        }
        let w = |k: u32| self.entries[k as usize].weight as u128;
        // (2j + 1) / 2w compared exactly: (2j_a + 1) · w_b against (2j_b + 1) · w_a.
        turns.sort_unstable_by(|a, b| {
            ((2 * a.0 + 1) as u128 * w(b.1))
                .cmp(&((2 * b.0 + 1) as u128 * w(a.1)))
                .then(a.1.cmp(&b.1))
        });
        self.cycle = turns.into_iter().map(|(_, k)| k).collect();
    }

    /// The entry the `turn`-th request takes (weighted), or the one connection `walked`
    /// requests into its sequence takes. A worker passes its own count of requests as the
    /// turn, so each worker's requests hold the shares exactly whatever pace each worker
    /// keeps (by the run's global index, a faster worker would take more of the cycle's even
    /// or odd slots and bias the mix).
    #[inline]
    pub fn pick(&self, turn: u64, walked: u64) -> usize {
        match self.order {
            Order::Weighted => self.cycle[(turn % self.cycle.len() as u64) as usize] as usize,
            Order::Sequence if self.journey.steps.is_empty() => {
                (walked % self.entries.len() as u64) as usize
            }
            Order::Sequence => {
                let steps = &self.journey.steps;
                steps[(walked % steps.len() as u64) as usize] as usize
            }
        }
    }

    /// Whether users keep state (variables, cookies, once steps, think times per step): the
    /// engine then runs a journey's users.
    pub fn is_journey(&self) -> bool {
        self.journey
            .is_active(self.entries.iter().any(|e| e.step.think_ns.is_some()))
    }

    /// In the open loop each arrival is a new user who walks one iteration (its once steps,
    /// then one pass of a sequence or one request of a mix): the first step of that walk that
    /// needs a value nothing before it in the walk captures, with the variable's name.
    pub fn open_loop_gap(&self) -> Option<(usize, &str)> {
        let j = &self.journey;
        let captures = |e: &Entry| e.checks.captures.iter().fold(0u64, |m, c| m | 1 << c.var);
        let mut have = j.once_captures;
        let looped: Vec<usize> = match self.order {
            Order::Sequence if !j.steps.is_empty() => j.steps.iter().map(|&k| k as usize).collect(),
            _ => (0..self.entries.len())
                .filter(|&k| !self.entries[k].step.once)
                .collect(),
        };
        for k in looped {
            let e = &self.entries[k];
            let missing = e.step.needs & !have;
            if missing != 0 {
                return Some((k, j.vars[missing.trailing_zeros() as usize].as_str()));
            }
            if self.order == Order::Sequence {
                have |= captures(e);
            }
        }
        None
    }

    /// The data row request `index` takes.
    pub fn row(&self, index: u64, seed: u64) -> Option<&[Vec<u8>]> {
        let d = self.data.as_ref()?;
        if d.rows.is_empty() {
            return None;
        }
        let n = d.rows.len() as u64;
        let i = match d.order {
            RowOrder::Sequential => index % n,
            RowOrder::Random => mix(seed ^ 0xD1B5_4A32_D192_ED03, index) % n,
        };
        Some(&d.rows[i as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(index: u64) -> Context<'static> {
        Context {
            index,
            conn: 3,
            user: 7,
            seed: 42,
            row: None,
            vars: &[],
            cookie: None,
        }
    }

    #[test]
    fn templates_render_their_placeholders() {
        let t = Template {
            parts: vec![
                Part::Lit(b"/items/".to_vec()),
                Part::Seq,
                Part::Lit(b"?c=".to_vec()),
                Part::Conn,
                Part::Lit(b"&u=".to_vec()),
                Part::User,
            ],
        };
        let mut out = Vec::new();
        t.render(&ctx(1234), &mut out);
        assert_eq!(out, b"/items/1234?c=3&u=7");
        let mut out = Vec::new();
        t.render(&ctx(0), &mut out);
        assert_eq!(out, b"/items/0?c=3&u=7");
    }

    #[test]
    fn random_values_stay_in_range_repeat_for_the_same_request_and_spread() {
        let t = Template {
            parts: vec![Part::Rand { lo: 1, hi: 10 }],
        };
        let mut seen = [0u32; 11];
        for i in 0..10_000 {
            let mut a = Vec::new();
            t.render(&ctx(i), &mut a);
            let mut b = Vec::new();
            t.render(&ctx(i), &mut b);
            assert_eq!(a, b, "a resent request renders the same bytes");
            let v: usize = std::str::from_utf8(&a).unwrap().parse().unwrap();
            assert!((1..=10).contains(&v));
            seen[v] += 1;
        }
        for v in &seen[1..] {
            assert!((850..1150).contains(v), "{seen:?}");
        }
    }

    #[test]
    fn uuids_are_version_4_and_distinct() {
        let t = Template {
            parts: vec![Part::Uuid],
        };
        let mut all = std::collections::BTreeSet::new();
        for i in 0..1000 {
            let mut out = Vec::new();
            t.render(&ctx(i), &mut out);
            let s = String::from_utf8(out).unwrap();
            assert_eq!(s.len(), 36);
            assert_eq!(&s[14..15], "4");
            assert!(matches!(&s[19..20], "8" | "9" | "a" | "b"), "{s}");
            all.insert(s);
        }
        assert_eq!(all.len(), 1000);
    }

    fn entry(weight: u64) -> Entry {
        Entry {
            endpoint: None,
            method: "GET".into(),
            path: Template::literal("/"),
            headers: Vec::new(),
            body: Body::None,
            weight,
            checks: Checks::default(),
            step: Default::default(),
        }
    }

    #[test]
    fn the_weighted_cycle_holds_each_request_its_weight_and_spreads_them() {
        let mut w = Workload {
            entries: vec![entry(80), entry(15), entry(5)],
            order: Order::Weighted,
            endpoints: vec!["a".into()],
            other: None,
            data: None,
            cycle: Vec::new(),
            hash: String::new(),
            source: String::new(),
            files: Vec::new(),
            journey: Default::default(),
        };
        w.build_cycle();
        assert_eq!(w.cycle.len(), 100);
        let count = |k: u32| w.cycle.iter().filter(|&&c| c == k).count();
        assert_eq!((count(0), count(1), count(2)), (80, 15, 5));
        // Spread: the 5 % request never comes twice within 10 requests.
        let at: Vec<usize> = (0..100).filter(|&i| w.cycle[i] == 2).collect();
        assert!(at.windows(2).all(|p| p[1] - p[0] >= 10), "{at:?}");
        // Any 100,000 consecutive indexes hold the shares exactly.
        let mut n = [0u64; 3];
        for i in 12_345..112_345 {
            n[w.pick(i, 0)] += 1;
        }
        assert_eq!(n, [80_000, 15_000, 5_000]);
    }

    #[test]
    fn a_cycle_of_many_requests_is_built_without_visiting_every_entry_per_slot() {
        let mut w = Workload {
            entries: vec![entry(1); 100_000],
            order: Order::Weighted,
            endpoints: Vec::new(),
            other: None,
            data: None,
            cycle: Vec::new(),
            hash: String::new(),
            source: String::new(),
            files: Vec::new(),
            journey: Default::default(),
        };
        w.build_cycle();
        assert!(w.cycle.iter().copied().eq(0..100_000u32));
        w.entries = vec![entry(5), entry(1), entry(1)];
        w.build_cycle();
        assert_eq!(w.cycle, [0, 0, 0, 1, 2, 0, 0]);
    }

    #[test]
    fn a_sequence_is_walked_per_connection() {
        let w = Workload {
            entries: vec![entry(0), entry(0), entry(0)],
            order: Order::Sequence,
            endpoints: vec!["a".into()],
            other: None,
            data: None,
            cycle: Vec::new(),
            hash: String::new(),
            source: String::new(),
            files: Vec::new(),
            journey: Default::default(),
        };
        let walk: Vec<usize> = (0..7).map(|k| w.pick(999, k)).collect();
        assert_eq!(walk, [0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn checks_combine_and_judge_statuses() {
        let cli = Checks {
            status: vec![(200, 299)],
            body_contains: vec![b"ok".to_vec()],
            ..Default::default()
        };
        let own = Checks {
            status: vec![(201, 201)],
            headers: vec![("location".into(), None)],
            ..Default::default()
        };
        let both = cli.and(&own);
        assert!(both.status_ok(201) && !both.status_ok(200));
        assert_eq!(both.body_contains.len(), 1);
        assert!(both.needs_body() && both.needs_headers());
        assert!(Checks::default().status_ok(500));
        assert!(Checks::default().is_empty());
    }
}
