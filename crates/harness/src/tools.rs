//! Servers whose tools are not installed: a `[[server]]`'s `requires` names the programs its
//! build and start need, and a server missing one is skipped with a note (its cells
//! `skipped`, its build not run) instead of failing the suite (docs/contract.md, "Suites").

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::Harness;
use volley_config::suite::{ServerKind, SuiteConfig};
use volley_model::result::{BuildStatus, CellStatus};

/// Looked in after PATH: where Debian installs system programs such as nginx, which a normal
/// user's PATH lacks while the server's own start script still finds them there.
const SYSTEM_DIRS: [&str; 3] = ["/usr/local/sbin", "/usr/sbin", "/sbin"];

/// Where `program` is: a path as given when it holds a `/`, else the first executable file of
/// that name in the directories of `path` (a PATH value), then in /usr/local/sbin, /usr/sbin and /sbin.
pub fn find(program: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    let dirs: Vec<PathBuf> = path
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    dirs.into_iter()
        .chain(SYSTEM_DIRS.iter().map(PathBuf::from))
        .map(|d| d.join(program))
        .find(|p| executable(p))
}

/// A file with an execute bit.
fn executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Each server missing a program it requires, with the note its cells get.
pub(crate) fn unavailable(suite: &SuiteConfig, path: Option<&OsStr>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for s in &suite.servers {
        let ServerKind::Managed(m) = &s.kind else {
            continue;
        };
        let missing: Vec<String> = m
            .requires
            .iter()
            .filter(|p| find(p, path).is_none())
            .map(|p| format!("`{p}`"))
            .collect();
        if !missing.is_empty() {
            out.insert(
                s.name.clone(),
                format!(
                    "not installed: {} not found on PATH (the server's `requires`); install {} to include this server",
                    missing.join(", "),
                    if missing.len() == 1 { "it" } else { "them" }
                ),
            );
        }
    }
    out
}

impl Harness<'_> {
    /// Marks the builds and cells of the servers in `missing` as skipped, with their note, and
    /// says so once per server.
    pub(super) fn skip_unavailable(&mut self, missing: &BTreeMap<String, String>) {
        for (server, why) in missing {
            self.log.line(&format!("skipped {server}: {why}"));
        }
        for b in &mut self.index.builds {
            if let Some(why) = missing.get(&b.server) {
                b.status = BuildStatus::Skipped;
                b.reason = Some(why.clone());
            }
        }
        for row in &mut self.index.rows {
            if let Some(why) = missing.get(&row.server) {
                row.status = CellStatus::Skipped;
                row.reason = Some(why.clone());
            }
        }
        if !missing.is_empty() {
            self.save_index_or_warn();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_on_path_then_in_the_system_folders() {
        let dir = tempfile::tempdir().unwrap();
        let tool = dir.path().join("mytool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        let plain = dir.path().join("notexec");
        std::fs::write(&plain, "").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths([dir.path()]).unwrap();
        assert_eq!(find("mytool", Some(&path)), Some(tool.clone()));
        assert_eq!(find("notexec", Some(&path)), None, "not executable");
        assert_eq!(find("mytool", None), None, "not on an empty PATH");
        assert_eq!(
            find(tool.to_str().unwrap(), None),
            Some(tool),
            "a path as given"
        );
        assert_eq!(find("volley-no-such-program", Some(&path)), None);
        // `sh` lives in /bin or /usr/bin, which an empty PATH does not name.
        assert_eq!(find("sh", Some(OsStr::new(""))), None);
    }

    #[test]
    fn a_server_missing_a_program_is_named_with_the_program() {
        let suite = SuiteConfig::parse(
            "[suite]\nname = \"t\"\n\
             [[server]]\nname = \"a\"\nstart = \"x\"\nrequires = [\"sh\", \"volley-no-such-program\"]\n\
             [[server]]\nname = \"b\"\nstart = \"x\"\nrequires = \"sh\"\n\
             [[server]]\nname = \"c\"\nstart = \"x\"\n\
             [[scenario]]\nname = \"g\"\n",
            Path::new("t.toml"),
            2,
        )
        .unwrap();
        let path = std::env::join_paths(["/usr/bin", "/bin"]).unwrap();
        let missing = unavailable(&suite, Some(&path));
        assert_eq!(missing.keys().collect::<Vec<_>>(), ["a"]);
        assert!(
            missing["a"].contains("`volley-no-such-program` not found on PATH"),
            "{missing:?}"
        );
    }
}
