//! Writing results: whole files or nothing, and standard output that never panics.

use std::io::Write;
use std::path::Path;

/// Writes a file through a temporary neighbour and a rename, so a reader (a browser
/// refreshing the report during a suite) never sees half of it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
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

/// Writes to standard output without panicking: a closed pipe (`| head`) or a full disk behind
/// a redirect must not turn into a crash (`println!` panics on a failed write). False when the
/// text could not be written.
pub fn stdout(text: &str) -> bool {
    let mut so = std::io::stdout().lock();
    so.write_all(text.as_bytes())
        .and_then(|_| so.flush())
        .is_ok()
}
