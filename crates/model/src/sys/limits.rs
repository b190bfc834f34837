//! Descriptor limits: volley raises its soft RLIMIT_NOFILE itself; when the hard limit is too
//! low it says which number is needed and how to raise it.

/// Descriptors volley needs beyond one per connection (epoll, timerfd, wakers, stdio, files).
pub const FD_SLACK: u64 = 64;

/// Why volley cannot have the descriptors a run needs.
#[derive(Debug, thiserror::Error)]
pub enum NofileError {
    /// The hard limit is below what the connections need; only root can raise it.
    #[error("{connections} connections need {needed} file descriptors, but the hard limit (RLIMIT_NOFILE) is {hard}; raise it to at least {needed} (as root: `ulimit -Hn {needed}` in this shell, or `nofile` in /etc/security/limits.conf, or LimitNOFILE= for a systemd unit)")]
    HardLimit {
        /// Connections asked for.
        connections: u64,
        /// Descriptors they need with volley's own.
        needed: u64,
        /// The hard limit.
        hard: u64,
    },
    /// Raising the soft limit failed.
    #[error("could not raise the descriptor limit from {from} to {to}: {source}")]
    Raise {
        /// The soft limit before.
        from: u64,
        /// The limit wanted.
        to: u64,
        /// The operating system's reason.
        source: std::io::Error,
    },
}

/// Decides the soft limit for `connections`: `Ok(None)` if the current one suffices,
/// `Ok(Some(n))` to raise it to `n`, or an error when the hard limit is too low.
pub(crate) fn plan_nofile(
    connections: u64,
    soft: u64,
    hard: u64,
) -> Result<Option<u64>, NofileError> {
    let needed = connections + FD_SLACK;
    if soft >= needed {
        return Ok(None);
    }
    if hard >= needed {
        return Ok(Some(needed.max(soft)));
    }
    Err(NofileError::HardLimit {
        connections,
        needed,
        hard,
    })
}

/// Applies `plan_nofile` to this process.
pub fn ensure_nofile(connections: u64) -> Result<(), NofileError> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(());
    }
    if let Some(soft) = plan_nofile(connections, lim.rlim_cur, lim.rlim_max)? {
        let new = libc::rlimit {
            rlim_cur: soft,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads the struct.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } != 0 {
            return Err(NofileError::Raise {
                from: lim.rlim_cur,
                to: soft,
                source: std::io::Error::last_os_error(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raises_the_soft_limit_or_names_the_number_needed() {
        assert_eq!(plan_nofile(100, 1024, 4096).unwrap(), None);
        assert_eq!(plan_nofile(10_000, 1024, 1_048_576).unwrap(), Some(10_064));
        let e = plan_nofile(20_000, 1024, 20_000).unwrap_err().to_string();
        assert!(e.contains("20064") && e.contains("ulimit -Hn 20064"), "{e}");
    }
}
