//! `--io`: io_uring and epoll give the same results; where io_uring is refused (a seccomp
//! policy, as container runtimes apply by default) `auto` falls back to epoll with a note and
//! an explicit `--io uring` is an error that names the flag.
//!
//! The rest of the integration tests run on the default backend; `make test` runs the fault,
//! hostile-server, TLS and HTTP/2 ones again with `VOLLEY_IO=epoll`.

use crate::common;

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::Duration;

use common::*;

const LIMIT: Duration = Duration::from_secs(20);

/// Whether io_uring works here at all (the same probe `auto` makes).
fn uring_here() -> bool {
    volley_json(
        &["run", &normal().url("/"), "-n", "1", "--io", "uring"],
        LIMIT,
    )
    .0 == 0
}

/// Installs a seccomp filter in the child that makes `io_uring_setup` fail with EPERM.
#[cfg(target_arch = "x86_64")]
fn refuse_io_uring() -> std::io::Result<()> {
    use libc::{sock_filter, sock_fprog};
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    let stmt = |code: u32, k: u32| sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |k: u32, jt: u8, jf: u8| sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let ret = libc::BPF_RET | libc::BPF_K;
    let filter = [
        stmt(load, 4), // seccomp_data.arch
        jump(AUDIT_ARCH_X86_64, 1, 0),
        stmt(ret, libc::SECCOMP_RET_ALLOW),
        stmt(load, 0), // seccomp_data.nr
        jump(libc::SYS_io_uring_setup as u32, 0, 1),
        stmt(ret, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        stmt(ret, libc::SECCOMP_RET_ALLOW),
    ];
    let prog = sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut sock_filter,
    };
    // SAFETY: plain prctl calls on the child between fork and exec; `prog` outlives them.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const sock_fprog,
            ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `volley run URL args --json - --quiet` with io_uring refused: (exit code, JSON or null,
/// stderr).
#[cfg(target_arch = "x86_64")]
fn run_refused(url: &str, args: &[&str]) -> (i32, serde_json::Value, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_volley"));
    cmd.args(["run", url])
        .args(args)
        .args(["--json", "-", "--quiet"]);
    cmd.env_remove("VOLLEY_IO");
    // SAFETY: the closure only makes async-signal-safe prctl calls.
    unsafe { cmd.pre_exec(refuse_io_uring) };
    let out = limited(&mut cmd, args, LIMIT);
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), json, stderr)
}

#[test]
#[cfg(target_arch = "x86_64")]
fn auto_falls_back_to_epoll_with_a_note_where_a_seccomp_policy_refuses_io_uring() {
    let s = normal();
    let (code, j, stderr) = run_refused(&s.url("/"), &["-c", "2", "-n", "500"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(j["client"]["io"], "epoll", "{j}");
    assert_eq!(j["requests"]["completed"], 500);
    let notes: Vec<&str> = j["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.starts_with("io_uring not used ("))
        .collect();
    assert_eq!(notes.len(), 1, "{j}");
    assert!(notes[0].contains("Operation not permitted"), "{}", notes[0]);
    assert_eq!(s.requests(), 500);
}

#[test]
#[cfg(target_arch = "x86_64")]
fn an_explicit_io_uring_that_cannot_be_set_up_is_an_error_naming_the_flag() {
    let s = normal();
    let (code, j, stderr) = run_refused(&s.url("/"), &["-n", "10", "--io", "uring"]);
    assert_eq!(code, 2, "found before the load starts: {stderr}");
    assert!(j.is_null(), "no result for a run that did not happen: {j}");
    assert!(stderr.contains("--io uring"), "{stderr}");
    assert!(
        stderr.contains("--io epoll"),
        "says what works instead: {stderr}"
    );
    assert_eq!(s.requests(), 0, "nothing was sent");
    // epoll needs nothing the policy refuses.
    let (code, j, stderr) = run_refused(&s.url("/"), &["-n", "10", "--io", "epoll"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(j["client"]["io"], "epoll");
    assert!(
        !j["warnings"].to_string().contains("io_uring not used"),
        "an epoll run asked for is not a fallback: {j}"
    );
}

#[test]
fn auto_takes_io_uring_for_keep_alive_and_epoll_for_a_connection_per_request() {
    let s = normal();
    let auto = |extra: &[&str]| {
        let mut args = vec!["run", "URL", "-c", "2", "-n", "50", "--io", "auto"];
        let url = s.url("/");
        args[1] = &url;
        args.extend_from_slice(extra);
        let (code, j, stderr) = volley_json(&args, LIMIT);
        assert_eq!(code, 0, "{stderr}");
        assert!(
            !j["warnings"].to_string().contains("io_uring not used"),
            "{j}"
        );
        j["client"]["io"].as_str().unwrap().to_string()
    };
    let expected = if uring_here() { "uring" } else { "epoll" };
    assert_eq!(auto(&[]), expected);
    assert_eq!(auto(&["--no-keepalive"]), "epoll");
}

#[test]
fn a_bad_wake_quantum_names_the_variable_and_zero_turns_it_off() {
    let run = |value: &str, url: &str| {
        Command::new(env!("CARGO_BIN_EXE_volley"))
            .args(["run", url, "-R", "200", "-n", "20", "-q"])
            .env("VOLLEY_WAKE_QUANTUM_US", value)
            .output()
            .unwrap()
    };
    for bad in ["fifty", "-1", "2000000"] {
        let out = run(bad, "http://127.0.0.1:9/");
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("VOLLEY_WAKE_QUANTUM_US variable: \"{bad}\"")),
            "{err}"
        );
    }
    let s = normal();
    for good in ["0", "50"] {
        assert_eq!(run(good, &s.url("/")).status.code(), Some(0), "{good}");
    }
}

#[test]
fn a_bad_volley_io_names_the_variable() {
    let out = Command::new(env!("CARGO_BIN_EXE_volley"))
        .args(["run", "http://127.0.0.1:9/", "-n", "1"])
        .env("VOLLEY_IO", "iouring")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("VOLLEY_IO=\"iouring\""), "{err}");
    // The flag wins over the variable.
    let s = normal();
    let out = Command::new(env!("CARGO_BIN_EXE_volley"))
        .args(["run", &s.url("/"), "-n", "3", "--io", "epoll", "-q"])
        .env("VOLLEY_IO", "iouring")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

/// The same loads on both backends: the same counts, on the server's side too.
#[test]
fn both_backends_count_the_same_requests_the_server_saw() {
    let uring = uring_here();
    let backends: &[&str] = if uring {
        &["uring", "epoll"]
    } else {
        &["epoll"]
    };
    for &io in backends {
        for extra in [
            &["-c", "3", "-n", "3000"][..],
            &["-c", "2", "-n", "2000", "--pipeline", "8"],
            &["-c", "4", "-n", "400", "--no-keepalive"],
            &["-c", "2", "-n", "600", "-R", "2000"],
        ] {
            let s = normal();
            let mut args = vec!["run", "URL", "--io", io];
            let url = s.url("/");
            args[1] = &url;
            args.extend_from_slice(extra);
            let (code, j, stderr) = volley_json(&args, LIMIT);
            let n: u64 = extra[extra.iter().position(|a| *a == "-n").unwrap() + 1]
                .parse()
                .unwrap();
            assert_eq!(code, 0, "{io} {extra:?}: {stderr}");
            assert_invariant(&j);
            assert_eq!(j["client"]["io"], io, "{extra:?}");
            assert_eq!(j["requests"]["completed"], n, "{io} {extra:?}");
            assert_eq!(j["requests"]["errors"], 0, "{io} {extra:?}");
            assert_eq!(s.requests(), n, "{io} {extra:?}: the server's count");
        }
    }
}

/// A large body arrives in many receive completions and a slow reader's queue fills: the
/// bytes are all counted on both backends.
#[test]
fn large_bodies_are_counted_whole_on_both_backends() {
    let body = vec![b'x'; 3 << 20];
    let s = spawn(move |mut c, _| {
        while c.read_request() {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
            if !c.write(head.as_bytes()) || !c.write(&body) {
                return;
            }
        }
    });
    let backends: &[&str] = if uring_here() {
        &["uring", "epoll"]
    } else {
        &["epoll"]
    };
    for &io in backends {
        let (code, j, stderr) = volley_json(
            &["run", &s.url("/"), "-c", "2", "-n", "20", "--io", io],
            LIMIT,
        );
        assert_eq!(code, 0, "{io}: {stderr}");
        assert_eq!(j["requests"]["completed"], 20, "{io}");
        let received = j["bytes"]["received"].as_u64().unwrap();
        assert!(received >= 20 * (3 << 20), "{io}: {received}");
    }
}
