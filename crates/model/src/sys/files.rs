//! Writing results: whole files or nothing, and standard output that never panics.

use std::io::Write;
use std::path::Path;

/// Writes a file through a temporary neighbour and a rename, so a reader (a browser
/// refreshing the report during a suite) never sees half of it. A path that is not a regular
/// file (`/dev/null`, a FIFO) is written as it is: a rename would replace the device.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| !m.file_type().is_file() && !m.is_dir()) {
        let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
        return write_output(&mut f, bytes);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            // A half-written temporary file would only take more of a full disk.
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Writes `bytes` to an output opened before the run and makes them durable when it is a
/// regular file: `--json /dev/null` or a FIFO cannot be synced (EINVAL), and need not be.
pub fn write_output(f: &mut std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
    f.write_all(bytes)?;
    if f.metadata()?.file_type().is_file() {
        f.sync_all()?;
    }
    Ok(())
}

/// Writes to standard output without panicking: a closed pipe (`| head`) or a full disk behind
/// a redirect must not turn into a crash (`println!` panics on a failed write). False when the
/// text could not be written.
pub fn stdout(text: &str) -> bool {
    let mut so = std::io::stdout().lock();
    so.write_all(text.as_bytes())
        .and_then(|_| so.flush())
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_are_written_as_they_are_not_replaced() {
        write_atomically(Path::new("/dev/null"), b"x").unwrap();
        let m = std::fs::metadata("/dev/null").unwrap();
        assert!(!m.file_type().is_file(), "/dev/null is still a device");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .unwrap();
        write_output(&mut f, b"x").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        write_atomically(&p, b"{}").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{}");
    }
}
