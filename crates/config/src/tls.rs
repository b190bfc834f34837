//! The transport flags: TLS settings of an `https://` run and `--unix-socket`. Files are
//! checked for being readable here; their contents (PEM) when the run is prepared.

use std::path::{Path, PathBuf};

use super::{ConfigError, Flag, RunFlags};
use volley_plan::{Scheme, TlsSpec};

/// The TLS settings of an `https://` URL; `None` for `http://`, where the TLS flags do nothing
/// (as with curl: a suite may give them to cells of both schemes).
pub(super) fn tls_spec(a: &RunFlags, scheme: Scheme) -> Result<Option<TlsSpec>, ConfigError> {
    if a.key.is_some() && a.cert.is_none() {
        return Err(ConfigError::conflict(
            Flag::Key,
            &[Flag::Cert],
            "needs --cert (the client certificate the key belongs to)",
        ));
    }
    if !scheme.is_tls() {
        return Ok(None);
    }
    for (flag, path) in [
        (Flag::Cacert, &a.cacert),
        (Flag::Cert, &a.cert),
        (Flag::Key, &a.key),
    ] {
        if let Some(p) = path {
            readable_file(flag, p)?;
        }
    }
    Ok(Some(TlsSpec {
        verify: !a.insecure,
        cacert: a.cacert.clone(),
        cert: a.cert.clone(),
        key: a.key.clone(),
        resume: !a.no_tls_resume,
        early_data: a.zero_rtt,
    }))
}

/// `--unix-socket`: a path is needed; whether a socket listens there is checked when the run
/// is prepared (a suite's server creates it only when it starts).
pub(super) fn unix_socket(a: &RunFlags) -> Result<Option<PathBuf>, ConfigError> {
    match &a.unix_socket {
        Some(p) if p.as_os_str().is_empty() => {
            Err(ConfigError::flag(Flag::UnixSocket, "the path is empty"))
        }
        other => Ok(other.clone()),
    }
}

fn readable_file(flag: Flag, path: &Path) -> Result<(), ConfigError> {
    let file_err = |source| ConfigError::File {
        flag,
        path: path.display().to_string(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(file_err)?;
    if meta.is_dir() {
        return Err(ConfigError::flag(
            flag,
            format!("{} is a directory, not a PEM file", path.display()),
        ));
    }
    std::fs::File::open(path).map_err(file_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::RunConfig;

    fn config(args: &[&str]) -> Result<RunConfig, ConfigError> {
        RunConfig::from_flags(
            &crate::args_from::<RunFlags, _, _>(args).expect("flags parse"),
            2,
        )
    }

    #[test]
    fn https_gets_tls_settings_and_http_ignores_them() {
        let c = config(&["https://localhost:8443/", "-k", "--no-tls-resume"]).unwrap();
        let tls = c.load.tls.expect("https has TLS settings");
        assert!(!tls.verify && !tls.resume);
        let c = config(&["http://localhost/", "-k"]).unwrap();
        assert!(c.load.tls.is_none());
        let e = config(&["https://h/", "--key", "/etc/hostname"]).unwrap_err();
        assert_eq!(e.flags(), vec![Flag::Key, Flag::Cert]);
        let e = config(&["https://h/", "--cacert", "/no/such/ca.pem"]).unwrap_err();
        assert!(
            e.to_string().starts_with("--cacert /no/such/ca.pem:"),
            "{e}"
        );
        let e = config(&["https://h/", "--cacert", "/tmp"]).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
    }

    #[test]
    fn unix_socket_keeps_the_url_for_host_and_path() {
        let c = config(&["http://api/v1?x=1", "--unix-socket", "/run/app.sock"]).unwrap();
        let t = &c.load.target;
        assert_eq!(t.unix_socket.as_deref(), Some(Path::new("/run/app.sock")));
        assert_eq!(
            (t.host_header.as_str(), t.path.as_str()),
            ("api", "/v1?x=1")
        );
    }
}
