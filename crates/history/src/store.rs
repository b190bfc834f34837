//! The history file: opened (created, checked, migrated) before a run's load, written after it
//! in one transaction, read by `volley history`. SQLite in WAL mode, so that readers never wait
//! and two savers take turns (`busy_timeout`) instead of failing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Transaction};

use super::git::GitInfo;
use super::host::Host;
use super::record::{Kind, Labels, Record, Source};
use super::schema::{APPLICATION_ID, MIGRATIONS, VERSION};
use super::HistoryError;

/// How long a saver waits for another one's transaction: 30 s, or `VOLLEY_HISTORY_BUSY_MS`
/// (outside the contract: for tests of a history that stays locked).
fn busy() -> Duration {
    std::env::var("VOLLEY_HISTORY_BUSY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(30), Duration::from_millis)
}

/// Why setting a file up failed.
enum SetUp {
    /// SQLite's error.
    Sql(rusqlite::Error),
    /// Written by a newer volley: its version.
    Newer(i64),
}

impl From<rusqlite::Error> for SetUp {
    fn from(e: rusqlite::Error) -> Self {
        SetUp::Sql(e)
    }
}

/// Another connection holds the lock.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// An open history.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// A saved run.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// Its row id (`volley history show ID`).
    pub id: i64,
    /// When it was saved, RFC 3339.
    pub recorded_at: String,
    /// What was saved (histograms left out: [`Store::histograms`]).
    pub record: Record,
}

/// Which runs to read.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Suite name.
    pub suite: Option<String>,
    /// Scenario name.
    pub scenario: Option<String>,
    /// Server name.
    pub server: Option<String>,
    /// Branch recorded.
    pub branch: Option<String>,
    /// Runs started at or after (RFC 3339, compared as text: both are UTC).
    pub since: Option<String>,
}

/// Whether [`Store::open`] may create the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Create it (and its folder) when missing: `--save`.
    Create,
    /// It must exist: the `history` commands that read.
    Existing,
}

impl Store {
    /// Opens `path`: creates it when `mode` allows, refuses a file that is not a volley history
    /// (another database, a corrupt or foreign file) or one of a newer schema, and migrates an
    /// older one.
    pub fn open(path: &Path, mode: Mode) -> Result<Store, HistoryError> {
        let err = |reason: String| HistoryError::Open {
            path: path.to_path_buf(),
            reason,
        };
        if mode == Mode::Existing && !path.exists() {
            return Err(HistoryError::Missing(path.to_path_buf()));
        }
        if path.is_dir() {
            return Err(err("is a directory".into()));
        }
        if mode == Mode::Create {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
            }
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | if mode == Mode::Create {
                OpenFlags::SQLITE_OPEN_CREATE
            } else {
                OpenFlags::empty()
            };
        let conn = Connection::open_with_flags(path, flags).map_err(|e| err(e.to_string()))?;
        conn.busy_timeout(busy()).map_err(|e| err(e.to_string()))?;
        // SQLite opens a file it may not write read-only without a word: the save would fail
        // after the load.
        if mode == Mode::Create && conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(true) {
            return Err(err("not writable".into()));
        }
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store.check_and_migrate()?;
        Ok(store)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn foreign(&self, why: impl Into<String>) -> HistoryError {
        HistoryError::NotHistory {
            path: self.path.clone(),
            why: why.into(),
        }
    }

    fn check_and_migrate(&mut self) -> Result<(), HistoryError> {
        let q = |e: rusqlite::Error| self.foreign(e.to_string());
        // One statement, one snapshot: another process may be creating the file right now,
        // and its schema and its application_id arrive in one transaction.
        let (app, tables): (i64, i64) = self
            .conn
            .query_row(
                "SELECT (SELECT application_id FROM pragma_application_id()), \
                        (SELECT count(*) FROM sqlite_schema)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(q)?;
        if app != APPLICATION_ID && (app != 0 || tables > 0) {
            return Err(self.foreign(format!(
                "a SQLite database of another program (application_id {app:#x}, {tables} schema objects)"
            )));
        }
        let ok: String = self
            .conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(q)?;
        if ok != "ok" {
            return Err(self.foreign(format!("damaged: {ok}")));
        }
        // Another process may be creating or migrating the file at this moment. SQLite answers
        // "locked" at once (not after the busy timeout) when two connections would deadlock
        // switching to WAL, so the set-up is tried again until the timeout.
        let deadline = std::time::Instant::now() + busy();
        loop {
            match self.set_up() {
                Ok(()) => return Ok(()),
                Err(SetUp::Sql(e)) if is_busy(&e) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(SetUp::Sql(e)) => return Err(self.save_error(e)),
                Err(SetUp::Newer(found)) => {
                    return Err(HistoryError::Newer {
                        path: self.path.clone(),
                        found,
                        supported: VERSION,
                    })
                }
            }
        }
    }

    /// WAL (readers do not wait for a saver, and a second saver waits its turn), then the
    /// migrations up to [`VERSION`].
    fn set_up(&mut self) -> Result<(), SetUp> {
        let _: String = self
            .conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        self.conn
            .execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > VERSION {
            return Err(SetUp::Newer(version));
        }
        if version == VERSION {
            return Ok(());
        }
        // Another process may be migrating: read the version again under the write lock.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        for sql in MIGRATIONS.iter().skip(version.max(0) as usize) {
            tx.execute_batch(sql)?;
        }
        tx.execute_batch(&format!(
            "PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = {VERSION};"
        ))?;
        Ok(tx.commit()?)
    }

    fn save_error(&self, e: rusqlite::Error) -> HistoryError {
        HistoryError::Save {
            path: self.path.clone(),
            reason: e.to_string(),
        }
    }

    /// Saves `records` in one transaction; the ids of the rows written (a result already saved,
    /// same digest, is not written again and has no id here).
    pub fn save(&mut self, records: &[Record]) -> Result<Vec<i64>, HistoryError> {
        let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| HistoryError::Save {
                path: self.path.clone(),
                reason: e.to_string(),
            })?;
        let mut ids = Vec::new();
        for r in records {
            match insert(&tx, r, &now) {
                Ok(Some(id)) => ids.push(id),
                Ok(None) => {}
                Err(e) => {
                    return Err(HistoryError::Save {
                        path: self.path.clone(),
                        reason: e.to_string(),
                    })
                }
            }
        }
        tx.commit().map_err(|e| HistoryError::Save {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        Ok(ids)
    }

    /// The runs `f` selects, oldest first, with their scalars.
    pub fn runs(&self, f: &Filter) -> Result<Vec<Stored>, HistoryError> {
        let read = |e: rusqlite::Error| HistoryError::Read {
            path: self.path.clone(),
            reason: e.to_string(),
        };
        let mut sql = format!("SELECT {COLUMNS} FROM runs WHERE 1 = 1");
        let mut args: Vec<String> = Vec::new();
        for (column, value) in [
            ("suite", &f.suite),
            ("scenario", &f.scenario),
            ("server", &f.server),
            ("git_branch", &f.branch),
        ] {
            if let Some(v) = value {
                args.push(v.clone());
                sql += &format!(" AND {column} = ?{}", args.len());
            }
        }
        if let Some(s) = &f.since {
            args.push(s.clone());
            sql += &format!(" AND started_at >= ?{}", args.len());
        }
        sql += " ORDER BY started_at, id";
        let mut stmt = self.conn.prepare(&sql).map_err(read)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args.iter()), row)
            .map_err(read)?;
        let mut out = Vec::new();
        for r in rows {
            out.push(r.map_err(read)?);
        }
        for s in &mut out {
            s.record.scalars = self.scalars(s.id).map_err(read)?;
            s.record.warnings = self.warnings(s.id).map_err(read)?;
        }
        Ok(out)
    }

    /// One run, by id.
    pub fn run(&self, id: i64) -> Result<Option<Stored>, HistoryError> {
        let read = |e: rusqlite::Error| HistoryError::Read {
            path: self.path.clone(),
            reason: e.to_string(),
        };
        let sql = format!("SELECT {COLUMNS} FROM runs WHERE id = ?1");
        let found = self
            .conn
            .query_row(&sql, [id], row)
            .optional()
            .map_err(read)?;
        let Some(mut s) = found else { return Ok(None) };
        s.record.scalars = self.scalars(id).map_err(read)?;
        s.record.warnings = self.warnings(id).map_err(read)?;
        let h = self.histograms(id).map_err(read)?;
        s.record.latency_hdr = h.get("latency").cloned();
        s.record.service_time_hdr = h.get("service_time").cloned();
        Ok(Some(s))
    }

    fn scalars(&self, id: i64) -> rusqlite::Result<BTreeMap<String, f64>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT name, value FROM scalars WHERE run = ?1")?;
        let rows = stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect()
    }

    fn warnings(&self, id: i64) -> rusqlite::Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT text FROM warnings WHERE run = ?1 ORDER BY position")?;
        let rows = stmt.query_map([id], |r| r.get(0))?;
        rows.collect()
    }

    /// A run's histograms by name (`latency`, `service_time`).
    pub fn histograms(&self, id: i64) -> rusqlite::Result<BTreeMap<String, String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT name, hdr FROM histograms WHERE run = ?1")?;
        let rows = stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect()
    }
}

const COLUMNS: &str = "id, recorded_at, started_at, kind, source, git_commit, git_branch, \
    git_dirty, git_time, git_subject, host_id, cpu_model, cores, client_cpus, server_cpus, \
    kernel, volley_version, load_id, suite, scenario, server, axes, rep, mode, url, \
    interrupted, result_path, digest";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Stored> {
    let commit: Option<String> = r.get("git_commit")?;
    let git = commit.map(|commit| -> rusqlite::Result<GitInfo> {
        Ok(GitInfo {
            commit,
            branch: r.get("git_branch")?,
            dirty: r.get::<_, i64>("git_dirty")? != 0,
            time: r.get("git_time")?,
            subject: r.get("git_subject")?,
        })
    });
    let kind: String = r.get("kind")?;
    let source: String = r.get("source")?;
    Ok(Stored {
        id: r.get("id")?,
        recorded_at: r.get("recorded_at")?,
        record: Record {
            kind: Kind::parse(&kind).unwrap_or(Kind::Run),
            source: Source::parse(&source).unwrap_or(Source::Import),
            started_at: r.get("started_at")?,
            git: git.transpose()?,
            host: Host {
                cpu_model: r.get("cpu_model")?,
                cores: r.get::<_, i64>("cores")? as usize,
                client_cpus: r.get("client_cpus")?,
                server_cpus: r.get("server_cpus")?,
                kernel: r.get("kernel")?,
            },
            volley_version: r.get("volley_version")?,
            load_id: r.get("load_id")?,
            labels: Labels {
                suite: r.get("suite")?,
                scenario: r.get("scenario")?,
                server: r.get("server")?,
                axes: r.get("axes")?,
                rep: r.get::<_, Option<i64>>("rep")?.map(|v| v as u32),
            },
            mode: {
                let word: String = r.get("mode")?;
                volley_model::result::Mode::parse(&word)
                    .unwrap_or(volley_model::result::Mode::Closed)
            },
            url: r.get("url")?,
            interrupted: r.get::<_, i64>("interrupted")? != 0,
            scalars: BTreeMap::new(),
            latency_hdr: None,
            service_time_hdr: None,
            warnings: Vec::new(),
            result_path: r.get("result_path")?,
            digest: r.get("digest")?,
        },
    })
}

/// Writes one record; `None` when a row of the same digest is already there.
fn insert(tx: &Transaction<'_>, r: &Record, now: &str) -> rusqlite::Result<Option<i64>> {
    let g = r.git.as_ref();
    let n = tx.execute(
        "INSERT INTO runs (recorded_at, started_at, kind, source, git_commit, git_branch,
            git_dirty, git_time, git_subject, host_id, cpu_model, cores, client_cpus,
            server_cpus, kernel, volley_version, load_id, suite, scenario, server, axes, rep,
            mode, url, interrupted, result_path, digest)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
            ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27)
         ON CONFLICT (digest) DO NOTHING",
        params![
            now,
            r.started_at,
            r.kind.as_str(),
            r.source.as_str(),
            g.map(|g| &g.commit),
            g.and_then(|g| g.branch.as_ref()),
            g.is_some_and(|g| g.dirty) as i64,
            g.and_then(|g| g.time.as_ref()),
            g.and_then(|g| g.subject.as_ref()),
            r.host.id(),
            r.host.cpu_model,
            r.host.cores as i64,
            r.host.client_cpus,
            r.host.server_cpus,
            r.host.kernel,
            r.volley_version,
            r.load_id,
            r.labels.suite,
            r.labels.scenario,
            r.labels.server,
            r.labels.axes,
            r.labels.rep.map(|v| v as i64),
            r.mode.as_str(),
            r.url,
            r.interrupted as i64,
            r.result_path,
            r.digest,
        ],
    )?;
    if n == 0 {
        return Ok(None);
    }
    let id = tx.last_insert_rowid();
    let mut s = tx.prepare_cached("INSERT INTO scalars (run, name, value) VALUES (?1, ?2, ?3)")?;
    for (name, value) in &r.scalars {
        if value.is_finite() {
            s.execute(params![id, name, value])?;
        }
    }
    let mut h = tx.prepare_cached("INSERT INTO histograms (run, name, hdr) VALUES (?1, ?2, ?3)")?;
    for (name, hdr) in [
        ("latency", &r.latency_hdr),
        ("service_time", &r.service_time_hdr),
    ] {
        if let Some(hdr) = hdr {
            h.execute(params![id, name, hdr])?;
        }
    }
    let mut w =
        tx.prepare_cached("INSERT INTO warnings (run, position, text) VALUES (?1, ?2, ?3)")?;
    for (i, text) in r.warnings.iter().enumerate() {
        w.execute(params![id, i as i64, text])?;
    }
    Ok(Some(id))
}
