//! `[[server]]` tables: a server volley builds and starts for every cell (`start`), one already
//! running (`url`), or a port nothing listens on (`control = "closed-port"`).

use std::path::PathBuf;
use std::time::Duration;

use toml::de::{DeTable, DeValue};

use super::toml_reader::{ArrayTable, TomlReader, Val};
use super::{Managed, Protocol, Runtime, ServerKind, ServerSpec, SuiteError};
use crate::parse_url;
use volley_model::units;

/// Keys of `[[server]]`.
const SERVER_KEYS: &[&str] = &[
    "name",
    "dir",
    "build",
    "start",
    "env",
    "ready_path",
    "ready_timeout",
    "url",
    "control",
    "version",
    "requires",
    "protocols",
    "runtime",
];

/// The keys of a managed server's lifecycle, which a `url` or control server cannot have.
const LIFECYCLE_KEYS: &[&str] = &[
    "dir",
    "build",
    "start",
    "env",
    "ready_path",
    "ready_timeout",
    "requires",
    "runtime",
];

/// Every `[[server]]` of `doc` in file order; a suite needs at least one.
pub(super) fn read_servers(r: &TomlReader, doc: &DeTable) -> Result<Vec<ServerSpec>, SuiteError> {
    let tables = r.array_of_tables(doc.get("server"), ArrayTable::Server)?;
    if tables.is_empty() {
        return Err(r.err(r.end(), None, "the suite has no [[server]]".into()));
    }
    let mut servers: Vec<ServerSpec> = Vec::new();
    for sv in &tables {
        let taken: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        let server = read_server(r, sv, &taken)?;
        servers.push(server);
    }
    Ok(servers)
}

/// One `[[server]]`, whose name must not be among `taken`.
fn read_server(r: &TomlReader, sv: &Val, taken: &[&str]) -> Result<ServerSpec, SuiteError> {
    let t = r.table(sv, "[[server]]", "server")?;
    r.known(t, SERVER_KEYS, "[[server]]")?;
    let name = r.name(t, sv, ArrayTable::Server, taken)?;
    let at = format!("[[server]] \"{name}\"");
    let kind = server_kind(r, t, sv, &at)?;
    let version = t
        .get("version")
        .map(|v| r.str(v, &at, "version"))
        .transpose()?;
    let protocols = match t.get("protocols") {
        Some(v) => protocols(r, v, &at)?,
        None => Protocol::ALL
            .iter()
            .copied()
            .filter(|p| p.by_default())
            .collect(),
    };
    Ok(ServerSpec {
        name,
        kind,
        version,
        protocols,
    })
}

/// `protocols = ["http/1.1", "https"]`: the protocols the server speaks, at least one.
fn protocols(r: &TomlReader, v: &Val, at: &str) -> Result<Vec<Protocol>, SuiteError> {
    let bad = |span, what: &str| {
        r.err(
            span,
            Some("protocols"),
            format!(
                "{at}: protocols: {what} (a list of {}; default: all)",
                Protocol::expected()
            ),
        )
    };
    let DeValue::Array(a) = v.get_ref() else {
        return Err(bad(v.span(), "must be a list"));
    };
    let mut out = Vec::new();
    for item in a.iter() {
        let DeValue::String(s) = item.get_ref() else {
            return Err(bad(item.span(), "each protocol is a string"));
        };
        match Protocol::parse(s) {
            Some(p) if !out.contains(&p) => out.push(p),
            Some(_) => return Err(bad(item.span(), &format!("`{s}` is listed twice"))),
            None => return Err(bad(item.span(), &format!("unknown protocol `{s}`"))),
        }
    }
    if out.is_empty() {
        return Err(bad(v.span(), "an empty list runs nothing"));
    }
    Ok(out)
}

/// What the server's keys make it: `control` wins over `url`, which wins over `start`.
fn server_kind(r: &TomlReader, t: &DeTable, sv: &Val, at: &str) -> Result<ServerKind, SuiteError> {
    if let Some(v) = t.get("control") {
        let c = r.str(v, at, "control")?;
        if c != "closed-port" {
            return Err(r.err(
                v.span(),
                Some("control"),
                format!("{at}: control: unknown control `{c}` (expected \"closed-port\")"),
            ));
        }
        r.exclusive(t, at, "control", &["url", "start", "protocols"])?;
        r.exclusive(t, at, "control", LIFECYCLE_KEYS)?;
        Ok(ServerKind::ClosedPort)
    } else if let Some(v) = t.get("url") {
        let u = r.str(v, at, "url")?;
        let target =
            parse_url(&u).map_err(|e| r.err(v.span(), Some("url"), format!("{at}: url: {e}")))?;
        r.exclusive(t, at, "url", LIFECYCLE_KEYS)?;
        Ok(ServerKind::Url(target))
    } else if t.get("start").is_some() {
        Ok(ServerKind::Managed(managed(r, t, sv, at)?))
    } else {
        Err(r.err(
            sv.span(),
            None,
            format!("{at}: needs `start` (a server volley runs), `url` (one already running) or `control = \"closed-port\"`"),
        ))
    }
}

/// The lifecycle of a server volley starts itself.
fn managed(r: &TomlReader, t: &DeTable, sv: &Val, at: &str) -> Result<Managed, SuiteError> {
    let start = r.req_str(t, "start", at, sv.span())?;
    let dir = match t.get("dir") {
        Some(v) => dir(r, v, at)?,
        None => PathBuf::from("."),
    };
    let build = t.get("build").map(|v| r.str(v, at, "build")).transpose()?;
    let env = match t.get("env") {
        Some(v) => env(r, v, at)?,
        None => Vec::new(),
    };
    let ready_path = match t.get("ready_path") {
        Some(v) => ready_path(r, v, at)?,
        None => "/".into(),
    };
    let ready_timeout = match t.get("ready_timeout") {
        Some(v) => ready_timeout(r, v, at)?,
        None => Duration::from_secs(30),
    };
    let requires = match t.get("requires") {
        Some(v) => requires(r, v, at)?,
        None => Vec::new(),
    };
    let runtime = t.get("runtime").map(|v| runtime(r, v, at)).transpose()?;
    Ok(Managed {
        dir,
        build,
        start,
        env,
        ready_path,
        ready_timeout,
        requires,
        runtime,
    })
}

/// `runtime = "jvm"|"go"|"node"`: the harness turns the runtime's GC log on through the
/// environment and reads it for every cell.
fn runtime(r: &TomlReader, v: &Val, at: &str) -> Result<Runtime, SuiteError> {
    let s = r.str(v, at, "runtime")?;
    Runtime::from_key(&s).ok_or_else(|| {
        r.err(
            v.span(),
            Some("runtime"),
            format!("{at}: runtime: unknown runtime `{s}` (expected \"jvm\", \"go\" or \"node\")"),
        )
    })
}

/// `requires = ["go"]` (or one string): programs the server's build and start need; each a
/// name looked up on PATH, or a path.
fn requires(r: &TomlReader, v: &Val, at: &str) -> Result<Vec<String>, SuiteError> {
    let bad = |span, what: &str| {
        r.err(
            span,
            Some("requires"),
            format!("{at}: requires: {what} (expected program names, e.g. requires = [\"go\"])"),
        )
    };
    let items: Vec<&Val> = match v.get_ref() {
        DeValue::Array(a) => a.iter().collect(),
        DeValue::String(_) => vec![v],
        _ => return Err(bad(v.span(), "must be a string or a list of strings")),
    };
    let mut out = Vec::new();
    for item in items {
        let DeValue::String(s) = item.get_ref() else {
            return Err(bad(item.span(), "must be a string or a list of strings"));
        };
        if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c == '\0') {
            return Err(bad(item.span(), &format!("`{s}` is not a program name")));
        }
        out.push(s.to_string());
    }
    Ok(out)
}

/// `dir`: a folder that exists now, so a typo fails before any build runs.
fn dir(r: &TomlReader, v: &Val, at: &str) -> Result<PathBuf, SuiteError> {
    let d = PathBuf::from(r.str(v, at, "dir")?);
    if !d.is_dir() {
        let cwd = std::env::current_dir().unwrap_or_default();
        return Err(r.err(
            v.span(),
            Some("dir"),
            format!(
                "{at}: dir `{}` is not a folder (relative paths are from the current directory, {})",
                d.display(),
                cwd.display()
            ),
        ));
    }
    Ok(d)
}

/// `env = { NAME = "value" }`: scalars are taken as their text, in file order.
fn env(r: &TomlReader, v: &Val, at: &str) -> Result<Vec<(String, String)>, SuiteError> {
    let et = r.table(v, at, "env")?;
    let mut env = Vec::new();
    for (k, ev) in et.iter() {
        let key = k.get_ref().to_string();
        let val = match ev.get_ref() {
            DeValue::String(s) => s.to_string(),
            DeValue::Integer(i) => i.as_str().to_string(),
            DeValue::Float(f) => f.as_str().to_string(),
            DeValue::Boolean(b) => b.to_string(),
            _ => {
                return Err(r.err(
                    ev.span(),
                    Some("env"),
                    format!("{at}: env.{key}: must be a string"),
                ))
            }
        };
        if key.is_empty() || key.contains(['=', '\0']) {
            return Err(r.err(
                k.span(),
                Some("env"),
                format!("{at}: env: `{key}` is not a variable name"),
            ));
        }
        env.push((key, val));
    }
    Ok(env)
}

/// `ready_path`: a request path that can go on the request line as is.
fn ready_path(r: &TomlReader, v: &Val, at: &str) -> Result<String, SuiteError> {
    let s = r.str(v, at, "ready_path")?;
    if !s.starts_with('/') || s.bytes().any(|b| b <= b' ') {
        return Err(r.err(
            v.span(),
            Some("ready_path"),
            format!("{at}: ready_path must start with `/` and hold no spaces"),
        ));
    }
    Ok(s)
}

/// `ready_timeout`: a duration above 0.
fn ready_timeout(r: &TomlReader, v: &Val, at: &str) -> Result<Duration, SuiteError> {
    let s = r.str(v, at, "ready_timeout")?;
    let d = units::parse_duration(&s).map_err(|m| {
        r.err(
            v.span(),
            Some("ready_timeout"),
            format!("{at}: ready_timeout: {m}"),
        )
    })?;
    if d.is_zero() {
        return Err(r.err(
            v.span(),
            Some("ready_timeout"),
            format!("{at}: ready_timeout must be above 0"),
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::super::testing::err;

    #[test]
    fn server_errors() {
        let (line, _, key, msg) =
            err("[suite]\nname = \"t\"\n[[server]]\nname = \"a\"\n[[scenario]]\nname = \"x\"\n");
        assert_eq!(line, 3);
        assert_eq!(key, None);
        assert!(msg.contains("needs `start`"), "{msg}");

        let (line, _, key, msg) = err("[suite]\nname = \"t\"\n[[server]]\nname = \"a\"\nstart = \"x\"\nready_timeout = \"soon\"\n[[scenario]]\nname = \"x\"\n");
        assert_eq!((line, key.as_deref()), (6, Some("ready_timeout")), "{msg}");

        let (line, _, key, msg) = err("[suite]\nname = \"t\"\n[[server]]\nname = \"a\"\ncontrol = \"open-port\"\n[[scenario]]\nname = \"x\"\n");
        assert_eq!((line, key.as_deref()), (5, Some("control")), "{msg}");

        let (line, _, key, msg) = err("[suite]\nname = \"t\"\n[[server]]\nname = \"a\"\nurl = \"ftp://x/\"\n[[scenario]]\nname = \"x\"\n");
        assert_eq!((line, key.as_deref()), (5, Some("url")), "{msg}");

        let s = super::super::testing::parse("[suite]\nname = \"t\"\n[[server]]\nname = \"a\"\nurl = \"https://localhost:8443/x\"\n[[scenario]]\nname = \"x\"\nprotocol = \"https\"\n").unwrap();
        assert!(
            matches!(&s.servers[0].kind, super::ServerKind::Url(t) if t.scheme == volley_plan::Scheme::Https && t.port == 8443)
        );

        let (line, _, key, msg) = err("[suite]\nname = \"t\"\n[[server]]\nname = \"a\"\nstart = \"x\"\ndir = \"/no/such/dir\"\n[[scenario]]\nname = \"x\"\n");
        assert_eq!((line, key.as_deref()), (6, Some("dir")), "{msg}");

        let (line, _, key, msg) = err("[suite]\nname = \"t\"\n[[server]]\nname = \"a\"\nstart = \"x\"\n[[server]]\nname = \"a\"\nstart = \"y\"\n[[scenario]]\nname = \"x\"\n");
        assert_eq!((line, key.as_deref()), (7, Some("name")), "{msg}");

        let (_, _, _, msg) = err("[suite]\nname = \"t\"\n[[scenario]]\nname = \"x\"\n");
        assert!(msg.contains("no [[server]]"), "{msg}");
    }

    #[test]
    fn runtime_names_the_gc_log_to_turn_on() {
        use super::super::Runtime;
        let head = "[suite]\nname = \"t\"\n[[server]]\nname = \"a\"\nstart = \"x\"\n";
        let s = super::super::testing::parse(&format!(
            "{head}runtime = \"jvm\"\n[[scenario]]\nname = \"x\"\n"
        ))
        .unwrap();
        let super::ServerKind::Managed(m) = &s.servers[0].kind else {
            panic!("a managed server")
        };
        assert_eq!(m.runtime, Some(Runtime::Jvm));
        let (line, _, key, msg) = err(&format!(
            "{head}runtime = \"beam\"\n[[scenario]]\nname = \"x\"\n"
        ));
        assert_eq!((line, key.as_deref()), (6, Some("runtime")));
        assert!(msg.contains("unknown runtime `beam`"), "{msg}");
        let (_, _, _, msg) = err("[suite]\nname = \"t\"\n[[server]]\nname = \"u\"\nurl = \"http://127.0.0.1:1/\"\nruntime = \"go\"\n[[scenario]]\nname = \"x\"\n");
        assert!(msg.contains("runtime"), "{msg}");
    }

    #[test]
    fn protocols_list_what_a_server_speaks() {
        use super::super::Protocol;
        let head = "[suite]\nname = \"t\"\n[[server]]\nname = \"a\"\nstart = \"x\"\n";
        let s = super::super::testing::parse(&format!(
            "{head}protocols = [\"http/1.1\", \"https\"]\n[[server]]\nname = \"b\"\nstart = \"y\"\n[[scenario]]\nname = \"x\"\n"
        ))
        .unwrap();
        assert_eq!(s.servers[0].protocols, [Protocol::Http1, Protocol::Https]);
        assert!(!s.servers[0].speaks(Protocol::H2c));
        assert_eq!(
            s.servers[1].protocols,
            [
                Protocol::Http1,
                Protocol::Https,
                Protocol::H2,
                Protocol::H2c
            ],
            "the default: all but h3, ws and wss"
        );
        assert!(!s.servers[1].speaks(Protocol::H3));
        assert!(!s.servers[1].speaks(Protocol::Ws));

        let (line, col, key, msg) = err(&format!(
            "{head}protocols = [\"h2\", \"http/2\"]\n[[scenario]]\nname = \"x\"\n"
        ));
        assert_eq!((line, col, key.as_deref()), (6, 20, Some("protocols")));
        assert!(msg.contains("unknown protocol `http/2`"), "{msg}");
        let (line, _, _, msg) = err(&format!(
            "{head}protocols = []\n[[scenario]]\nname = \"x\"\n"
        ));
        assert!(line == 6 && msg.contains("empty list"), "{msg}");
        let (line, _, _, msg) = err(&format!(
            "{head}protocols = \"h2\"\n[[scenario]]\nname = \"x\"\n"
        ));
        assert!(line == 6 && msg.contains("must be a list"), "{msg}");
        let (line, _, key, msg) = err("[suite]\nname = \"t\"\n[[server]]\nname = \"a\"\ncontrol = \"closed-port\"\nprotocols = [\"h2\"]\n[[scenario]]\nname = \"x\"\n");
        assert_eq!((line, key.as_deref()), (6, Some("protocols")), "{msg}");
    }
}
