//! `--requests-file`: a file of requests read into a [`Workload`] (docs/contract.md,
//! "Workloads": which format a file is read as, and where the paths inside it start). Two
//! formats: volley's TOML (`toml_file`: weights or a sequence, templates, a data file, checks per
//! request) and vegeta's plain targets (`vegeta`: literal requests, weight 1 each).
//!
//! The parts: `template` (placeholders in a path, a header value or a body), `data` (the CSV
//! of `{row.COLUMN}`), `weights` (weights as written to the whole numbers of the cycle),
//! `names` (the default name of a request without one: `GET /posts/{rand:1..100}`).
//! Every error names the file, line and column, and the key where there is one.

mod data;
mod names;
mod template;
mod toml_file;
mod vegeta;
mod weights;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::{parse_url, ConfigError};
use crate::located;
use volley_plan::workload::{Checks, Data, Entry, Order, Template, Workload};
use volley_plan::Target;

/// A requests file that cannot be used (exit code 2): unreadable, or wrong at a place in it.
pub type RequestsError = crate::FileError;

/// What a requests file is read against: the run's URL (whose scheme, host and port every
/// request must share) and the `--expect-*` checks every request's own are added to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Run<'a> {
    /// The run's target.
    pub target: &'a Target,
    /// The command line's checks.
    pub checks: &'a Checks,
    /// A gRPC run's methods and messages (`--grpc`, `--proto`): each request is a call.
    pub grpc: Option<&'a crate::grpc::Calls>,
    /// A `ws://` or `wss://` run: each request is a message.
    pub ws: bool,
}

/// Reads the requests file `path` (relative to the current directory) for `run`.
pub fn load(path: &Path, run: Run) -> Result<Workload, RequestsError> {
    let bytes = std::fs::read(path).map_err(|e| RequestsError::Read {
        path: path.display().to_string(),
        source: e,
    })?;
    parse(&bytes, path, run)
}

/// Reads requests file `bytes`; `path` names the file in messages and in
/// [`Workload::source`], and its directory is where the file's own paths start.
pub fn parse(bytes: &[u8], path: &Path, run: Run) -> Result<Workload, RequestsError> {
    let src = Source::new(bytes, path)?;
    let mut hash = Sha256::new();
    hash.update(bytes);
    let read = if path.extension().is_some_and(|e| e == "toml") {
        let doc = src.toml()?;
        toml_file::read(&src, doc.get_ref(), run, &mut hash)?
    } else {
        detect(&src, run, &mut hash)?
    };
    let (mut entries, mut endpoints) = (read.entries, read.endpoints);
    let columns = read.data.as_ref().map_or(&[][..], |d| &d.columns[..]);
    let other = names::name_unnamed(&mut entries, &mut endpoints, (columns, &read.journey.vars));
    let mut w = Workload {
        entries,
        order: read.order,
        endpoints,
        other,
        data: read.data,
        cycle: Vec::new(),
        hash: format!("{:x}", hash.finalize()),
        source: path.display().to_string(),
        files: {
            let mut f: Vec<PathBuf> = src.files.borrow().keys().cloned().collect();
            f.sort();
            f
        },
        journey: read.journey,
    };
    w.build_cycle();
    Ok(w)
}

/// A file not named `*.toml`: TOML when it parses as TOML with a `request` key, else vegeta's
/// targets; when neither reads, what each expected, each at its line.
fn detect(src: &Source, run: Run, hash: &mut Sha256) -> Result<Read, RequestsError> {
    let toml = toml::de::DeTable::parse(src.text);
    if let Ok(doc) = &toml {
        if doc.get_ref().get("request").is_some() {
            return toml_file::read(src, doc.get_ref(), run, hash);
        }
    }
    if run.grpc.is_some() || run.ws {
        return Err(src.err(
            0,
            None,
            "a gRPC or WebSocket run's requests file is volley's TOML ([[request]] tables with a `body`), not vegeta targets".to_string(),
        ));
    }
    match vegeta::read(src, run, hash) {
        Ok(read) => Ok(read),
        Err(vegeta::Failure::Later(e)) => Err(e),
        Err(vegeta::Failure::First { at, message }) => {
            let as_toml = match &toml {
                Ok(_) => "it parses as TOML but has no [[request]]".to_string(),
                Err(e) => {
                    let (line, column) = src.line_col(e.span().map_or(0, |s| s.start));
                    format!(
                        "as TOML, line {line} column {column}: {}",
                        e.message().trim_end()
                    )
                }
            };
            Err(src.err(
                at,
                None,
                format!(
                    "neither a TOML requests file nor vegeta targets: as vegeta targets, {message}; {as_toml}"
                ),
            ))
        }
    }
}

/// A requests file read: what [`Workload`] needs besides its cycle, hash and source.
struct Read {
    entries: Vec<Entry>,
    order: Order,
    endpoints: Vec<String>,
    data: Option<Arc<Data>>,
    journey: volley_plan::journey::Journey,
}

/// The text of the file, where it is, and the files it names.
struct Source<'t> {
    text: &'t str,
    /// The file as given, for messages.
    file: String,
    /// Its directory: where the paths it names start.
    dir: PathBuf,
    /// Files it names, read once each (a body file shared by many requests).
    files: std::cell::RefCell<HashMap<PathBuf, Arc<[u8]>>>,
}

impl<'t> Source<'t> {
    /// `bytes` as text (a requests file is UTF-8).
    fn new(bytes: &'t [u8], path: &Path) -> Result<Self, RequestsError> {
        let file = path.display().to_string();
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let ok = std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or("");
            let message = "not UTF-8 text (a requests file is TOML or vegeta's targets)";
            located::error_at(ok, &file, ok.len(), None, message.into())
        })?;
        Ok(Source {
            text,
            file,
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            files: Default::default(),
        })
    }

    /// The spanned TOML document; a syntax error points at where the parser stopped.
    fn toml(&self) -> Result<toml::Spanned<toml::de::DeTable<'t>>, RequestsError> {
        located::parse(self.text, &self.file)
    }

    /// 1-based line and column of byte offset `at`.
    fn line_col(&self, at: usize) -> (usize, usize) {
        located::line_col(self.text, at)
    }

    /// An error at byte offset `at`, about `key` when there is one.
    fn err(&self, at: usize, key: Option<&str>, message: String) -> RequestsError {
        located::error_at(self.text, &self.file, at, key, message)
    }

    /// `name` as the file names it, from the file's directory.
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The bytes of the file `name` names (relative to this file's directory), read once and
    /// hashed the first time; the error says which file, as found from here.
    fn read(&self, name: &str, hash: &mut Sha256) -> Result<Arc<[u8]>, String> {
        let path = self.path(name);
        if let Some(b) = self.files.borrow().get(&path) {
            return Ok(b.clone());
        }
        let bytes: Arc<[u8]> = std::fs::read(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .into();
        hash.update(&bytes);
        self.files.borrow_mut().insert(path, bytes.clone());
        Ok(bytes)
    }
}

/// The path and query of `url`, which must be on the run's scheme, host and port: the URL on
/// the command line names the server, the file only what to ask it.
fn path_of_url(url: &str, target: &Target) -> Result<String, String> {
    let t = parse_url(url).map_err(|e| match e {
        ConfigError::Flag { message, .. } => message,
        other => other.to_string(),
    })?;
    let same = t.scheme == target.scheme
        && t.host.eq_ignore_ascii_case(&target.host)
        && t.port == target.port;
    if !same {
        return Err(format!(
            "`{}` is not on the run's {}://{}: the URL on the command line names the server, the file only the paths",
            volley_model::result::redact::url(url),
            target.scheme.as_str(),
            authority(&target.host, target.port),
        ));
    }
    Ok(t.path)
}

/// `host:port`, with brackets around an IPv6 address.
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A line or value as a message quotes it: only up to its first white space, as the rest may
/// be a credential (`Authorization: Bearer …`).
fn first_word(t: &str) -> String {
    let t = t.trim();
    let start = t.split_whitespace().next().unwrap_or("");
    let start: String = start.chars().take(60).collect();
    if start.len() < t.len() {
        format!("{start} …")
    } else {
        start
    }
}

/// A header name: an RFC 9110 token.
fn check_header_name(name: &str) -> Result<(), String> {
    if name.is_empty() || !name.bytes().all(super::request::is_token_byte) {
        return Err(format!("`{name}` is not a header name"));
    }
    Ok(())
}

/// A byte a path may not hold as it is (a space, a control character).
fn bad_in_path(b: u8) -> bool {
    b <= b' ' || b == 0x7f
}

/// A byte a header value may not hold (it would end the header).
fn bad_in_header(b: u8) -> bool {
    matches!(b, b'\r' | b'\n' | 0)
}

/// The first literal byte of `t` that `bad` refuses.
fn bad_literal(t: &Template, bad: impl Fn(u8) -> bool) -> Option<u8> {
    t.parts.iter().find_map(|p| match p {
        volley_plan::workload::Part::Lit(b) => b.iter().copied().find(|b| bad(*b)),
        _ => None,
    })
}

/// The default method: POST with a body, else GET (as `volley run` and curl).
fn default_method(has_body: bool) -> String {
    if has_body { "POST" } else { "GET" }.to_string()
}

#[cfg(test)]
mod testing {
    //! What the tests of the readers share.

    use std::path::Path;

    use super::{parse, RequestsError, Run};
    use volley_plan::workload::{Checks, Workload};
    use volley_plan::Target;

    /// The run's target of the tests.
    pub(super) fn target() -> Target {
        crate::parse_url("http://127.0.0.1:8080/").unwrap()
    }

    /// `text` read as `name` in `dir` with no command-line checks.
    pub(super) fn read_in(dir: &Path, name: &str, text: &str) -> Result<Workload, RequestsError> {
        let target = target();
        let checks = Checks::default();
        parse(
            text.as_bytes(),
            &dir.join(name),
            Run {
                target: &target,
                checks: &checks,
                grpc: None,
                ws: false,
            },
        )
    }

    /// `text` read as `mix.toml` in the current directory.
    pub(super) fn read(text: &str) -> Result<Workload, RequestsError> {
        read_in(Path::new(""), "mix.toml", text)
    }

    /// The line, column, key and message of the error `text` (as `mix.toml`) must cause.
    pub(super) fn err(text: &str) -> (usize, usize, Option<String>, String) {
        at(read(text).unwrap_err())
    }

    /// The line, column, key and message of an error at a place.
    pub(super) fn at(e: RequestsError) -> (usize, usize, Option<String>, String) {
        match e {
            RequestsError::At {
                line,
                column,
                key,
                message,
                ..
            } => (line, column, key, message),
            e => panic!("unexpected {e}"),
        }
    }
}
