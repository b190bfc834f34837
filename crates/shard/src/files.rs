//! The files a load names on this machine (`--cacert`, `--body-file`, `--requests-file` and the
//! data and body files that one reads), carried into the pods in a ConfigMap mounted read-only
//! at [`MOUNT`]: each under a folder of its own, a requests file with its folder's layout so
//! the names in it still resolve.

use std::path::{Component, Path, PathBuf};

use super::manifest::ManifestError;

/// Where the pods find the files.
pub const MOUNT: &str = "/etc/volley/files";
/// The most bytes all files may hold together: a ConfigMap is stored whole in etcd, which
/// refuses objects over 1 MiB (the rest of the object needs some room).
pub(crate) const MAX_BYTES: usize = 1_000_000;

/// One file in the ConfigMap.
#[derive(Debug, Clone, PartialEq)]
pub struct FileItem {
    /// Its ConfigMap key (`f0`, `f1`, …).
    pub key: String,
    /// Its path under [`MOUNT`] (`f0/ca.pem`, `f1/users.csv`).
    pub path: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// A flag whose value becomes the file's path in the pods.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewrite {
    /// The flag (`--cacert`).
    pub flag: &'static str,
    /// The path the pods read.
    pub in_pod: String,
}

/// What travels: the files, and the flags that point at them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shipped {
    /// The ConfigMap's files.
    pub items: Vec<FileItem>,
    /// The flags to point at the mounted copies.
    pub rewrites: Vec<Rewrite>,
}

/// A file to ship: the flag that names it, the file, and the files it names itself (a
/// requests file's data and body files, as found).
pub struct Named<'a> {
    /// The flag.
    pub flag: &'static str,
    /// The file.
    pub path: &'a Path,
    /// The files it reads, found from its folder.
    pub reads: &'a [PathBuf],
}

fn refuse(flag: &'static str, path: &Path, why: String) -> ManifestError {
    ManifestError {
        flag,
        value: path.display().to_string(),
        why,
    }
}

/// `p` below `dir` as a relative path of plain names, or None (outside it, or `..`).
fn below(p: &Path, dir: &Path) -> Option<String> {
    let rel = p.strip_prefix(dir).ok()?;
    let plain = rel.components().all(|c| matches!(c, Component::Normal(_)));
    (plain && rel.components().next().is_some()).then(|| rel.to_string_lossy().into_owned())
}

/// Reads every named file (and what each reads) into the ConfigMap's items.
pub fn ship(named: &[Named]) -> Result<Shipped, ManifestError> {
    let mut out = Shipped::default();
    let mut total = 0usize;
    for (i, n) in named.iter().enumerate() {
        let folder = format!("f{i}");
        let dir = n.path.parent().unwrap_or(Path::new(""));
        let own = n.path.file_name().map(|f| f.to_string_lossy().into_owned());
        let own = own.ok_or_else(|| refuse(n.flag, n.path, "is not a file".into()))?;
        let mut add = |p: &Path, rel: String| -> Result<(), ManifestError> {
            let bytes = std::fs::read(p).map_err(|e| refuse(n.flag, p, e.to_string()))?;
            total += bytes.len();
            if total > MAX_BYTES {
                return Err(refuse(n.flag, p, format!("the files of the load come to more than {MAX_BYTES} bytes, more than a ConfigMap holds")));
            }
            let key = format!("f{}", out.items.len());
            out.items.push(FileItem {
                key,
                path: format!("{folder}/{rel}"),
                bytes,
            });
            Ok(())
        };
        add(n.path, own.clone())?;
        for r in n.reads {
            let rel = below(r, dir).ok_or_else(|| {
                refuse(n.flag, n.path, format!("it reads {}, outside its own folder; the pods get that folder's files only (move the file beside it)", r.display()))
            })?;
            add(r, rel)?;
        }
        out.rewrites.push(Rewrite {
            flag: n.flag,
            in_pod: format!("{MOUNT}/{folder}/{own}"),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requests_file_travels_with_its_folder_layout() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("data")).unwrap();
        std::fs::write(d.join("mix.toml"), "x").unwrap();
        std::fs::write(d.join("data/users.csv"), "id\n1\n").unwrap();
        std::fs::write(d.join("ca.pem"), "pem").unwrap();
        let reads = [d.join("data/users.csv")];
        let ca = d.join("ca.pem");
        let mix = d.join("mix.toml");
        let s = ship(&[
            Named {
                flag: "--cacert",
                path: &ca,
                reads: &[],
            },
            Named {
                flag: "--requests-file",
                path: &mix,
                reads: &reads,
            },
        ])
        .unwrap();
        let paths: Vec<&str> = s.items.iter().map(|i| i.path.as_str()).collect();
        assert_eq!(paths, ["f0/ca.pem", "f1/mix.toml", "f1/data/users.csv"]);
        assert_eq!(s.items[2].key, "f2");
        assert_eq!(s.items[2].bytes, b"id\n1\n");
        assert_eq!(s.rewrites[1].in_pod, "/etc/volley/files/f1/mix.toml");
    }

    #[test]
    fn files_outside_the_folder_missing_or_too_big_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("sub/mix.toml"), "x").unwrap();
        std::fs::write(d.join("up.csv"), "x").unwrap();
        let mix = d.join("sub/mix.toml");
        let up = [d.join("sub/../up.csv")];
        let e = ship(&[Named {
            flag: "--requests-file",
            path: &mix,
            reads: &up,
        }])
        .unwrap_err();
        assert!(e.why.contains("outside its own folder"), "{e}");
        let gone = d.join("gone.pem");
        let e = ship(&[Named {
            flag: "--cacert",
            path: &gone,
            reads: &[],
        }])
        .unwrap_err();
        assert_eq!(e.flag, "--cacert");
        std::fs::write(d.join("big"), vec![0u8; MAX_BYTES + 1]).unwrap();
        let big = d.join("big");
        let e = ship(&[Named {
            flag: "--body-file",
            path: &big,
            reads: &[],
        }])
        .unwrap_err();
        assert!(e.why.contains("more than a ConfigMap holds"), "{e}");
    }
}
