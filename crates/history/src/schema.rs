//! The database's schema and its migrations. `PRAGMA user_version` is the schema version and
//! `PRAGMA application_id` marks the file as volley's; a file of a newer version is refused,
//! an older one is migrated in one transaction when opened. docs/contract.md, "Run history",
//! lists the tables.

/// `PRAGMA application_id` of a volley history: "Voly".
pub const APPLICATION_ID: i64 = 0x566F_6C79;

/// Each version's statements, in order: migration `i` takes version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: runs, their scalars and histograms.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        recorded_at TEXT NOT NULL,
        started_at TEXT NOT NULL,
        kind TEXT NOT NULL,
        source TEXT NOT NULL,
        git_commit TEXT,
        git_branch TEXT,
        git_dirty INTEGER NOT NULL DEFAULT 0,
        host_id TEXT NOT NULL,
        cpu_model TEXT,
        cores INTEGER NOT NULL,
        client_cpus TEXT NOT NULL,
        server_cpus TEXT,
        kernel TEXT,
        volley_version TEXT NOT NULL,
        load_id TEXT NOT NULL,
        suite TEXT NOT NULL DEFAULT '',
        scenario TEXT NOT NULL DEFAULT '',
        server TEXT NOT NULL DEFAULT '',
        axes TEXT NOT NULL DEFAULT '',
        rep INTEGER,
        mode TEXT NOT NULL,
        url TEXT NOT NULL,
        interrupted INTEGER NOT NULL,
        result_path TEXT,
        digest TEXT NOT NULL UNIQUE
    );
    CREATE TABLE scalars (
        run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        value REAL NOT NULL,
        PRIMARY KEY (run, name)
    ) WITHOUT ROWID;
    CREATE TABLE histograms (
        run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        hdr TEXT NOT NULL,
        PRIMARY KEY (run, name)
    ) WITHOUT ROWID;
    CREATE INDEX runs_series ON runs (load_id, host_id);
    CREATE INDEX runs_commit ON runs (git_commit);",
    // 2: the commit's time and subject (the trend's axis and labels), and headline warnings.
    "ALTER TABLE runs ADD COLUMN git_time TEXT;
    ALTER TABLE runs ADD COLUMN git_subject TEXT;
    CREATE TABLE warnings (
        run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        text TEXT NOT NULL,
        PRIMARY KEY (run, position)
    ) WITHOUT ROWID;
    CREATE INDEX runs_started ON runs (started_at);",
];

/// The version this volley writes.
pub const VERSION: i64 = MIGRATIONS.len() as i64;
