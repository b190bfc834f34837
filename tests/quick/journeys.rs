//! Journeys end to end over HTTP/1.1 (docs/contract.md, "Journeys"): the real `volley` binary
//! against an in-process login app that issues a new token per login and counts requests per
//! token (`common::login`): each user logs in once per life, sends only its own token and
//! cookie, and a capture that fails skips its dependents instead of sending them empty. The
//! same journeys over h2 and h2c, through nginx, are in `full::journeys`.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use common::{login, scratch, volley, volley_json};

const LIMIT: Duration = Duration::from_secs(60);

fn dir(name: &str) -> PathBuf {
    scratch("journeys", name)
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// The login journey: log in once (capturing the token; the session cookie goes to the jar),
/// then `/me` with the token and `/cart` with the token and the cookie, again and again.
pub const JOURNEY: &str = r#"
[[request]]
name = "login"
once = true
method = "POST"
path = "/login"
headers = { Content-Type = "application/json" }
body = '{{"user": "u{user}"}}'
expect_status = 200
capture = { token = { json = "$.accessToken" } }

[[request]]
name = "me"
path = "/me"
headers = { Authorization = "Bearer {var.token}", X-User = "u{user}" }
expect_status = 200

[[request]]
name = "cart"
path = "/cart"
headers = { Authorization = "Bearer {var.token}", X-User = "u{user}" }
expect_status = 200
"#;

/// Runs `text` as the requests file of a `volley run` against `app` with `args`: exit code,
/// RunResult and stderr.
fn run_journey(
    app: &login::LoginApp,
    name: &str,
    text: &str,
    args: &[&str],
) -> (i32, Value, String) {
    let file = write(&dir(name), "journey.toml", text);
    let url = app.url("/");
    let mut all = vec!["run", url.as_str(), "--requests-file", file.as_str()];
    all.extend_from_slice(args);
    volley_json(&all, LIMIT)
}

fn endpoint<'a>(j: &'a Value, name: &str) -> &'a Value {
    j["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no endpoint {name}: {}", j["endpoints"]))
}

#[test]
fn each_connection_is_a_user_that_logs_in_once_and_sends_only_its_own_token_and_cookie() {
    let app = login::start();
    let (code, j, err) = run_journey(
        &app,
        "closed",
        JOURNEY,
        &["-c", "6", "-t", "2", "-n", "3000"],
    );
    assert_eq!(code, 0, "{err}");
    let t = app.tally();
    assert_eq!(t.logins.len(), 6, "six users: {:?}", t.logins);
    assert!(
        t.logins.values().all(|&n| n == 1),
        "each logs in once: {:?}",
        t.logins
    );
    assert_eq!(
        (t.unauthorized, t.mixups, t.empty_tokens),
        (0, 0, 0),
        "{t:?}"
    );
    assert_eq!(
        t.per_token.len(),
        6,
        "every user used its token: {:?}",
        t.per_token
    );
    let cart = endpoint(&j, "cart")["requests"]["completed"]
        .as_u64()
        .unwrap();
    assert!(cart > 1000, "{cart}");
    assert_eq!(
        t.cookies_ok, cart,
        "every cart request carried its own session cookie"
    );
    assert_eq!(j["journey"]["users_started"], 6, "{}", j["journey"]);
    assert_eq!(j["requests"]["skipped"], 0);
    assert_eq!(j["checks"]["capture"], 0, "{}", j["checks"]);
    assert_eq!(endpoint(&j, "login")["requests"]["sent"], 6);
    assert_eq!(endpoint(&j, "me")["requests"]["skipped"], 0);
    assert_eq!(j["requests"]["completed"], 3000);
    crate::quick::schema::assert_valid(&j, "a journey's result");
}

#[test]
fn with_pipelining_each_slot_of_the_window_is_a_user() {
    let app = login::start();
    let (code, j, err) = run_journey(
        &app,
        "pipeline",
        JOURNEY,
        &["-c", "2", "-t", "1", "--pipeline", "4", "-n", "2000"],
    );
    assert_eq!(code, 0, "{err}");
    let t = app.tally();
    assert_eq!(
        t.logins.values().sum::<u64>(),
        8,
        "2 connections × 4: {:?}",
        t.logins
    );
    assert_eq!(
        (t.unauthorized, t.mixups, t.empty_tokens),
        (0, 0, 0),
        "{t:?}"
    );
    assert_eq!(j["journey"]["users_started"], 8);
}

#[test]
fn users_logged_in_during_the_warmup_go_on_in_the_measured_window() {
    for rate in [None, Some("300")] {
        let app = login::start();
        let mut args = vec!["-c", "4", "-t", "1", "--warmup", "0.3s", "-d", "0.6s"];
        if let Some(r) = rate {
            args.extend(["-R", r]);
        }
        let (code, j, err) = run_journey(&app, "warmup", &sequenced(JOURNEY), &args);
        assert_eq!(code, 0, "{rate:?}: {err}");
        let t = app.tally();
        assert_eq!(
            (t.unauthorized, t.mixups, t.empty_tokens),
            (0, 0, 0),
            "{rate:?}: {t:?}"
        );
        match rate {
            // The four users logged in during the warm-up and only then.
            None => {
                assert_eq!(t.logins.values().sum::<u64>(), 4, "{:?}", t.logins);
                assert_eq!(j["journey"]["users_started"], 0, "{}", j["journey"]);
            }
            // Every arrival, warm-up or measured, is a user of its own.
            Some(_) => {
                let logins: u64 = t.logins.values().sum();
                let measured = j["journey"]["arrivals"].as_u64().unwrap();
                assert!(logins > measured && measured >= 170, "{logins} {measured}");
                // (A warm-up iteration's step not yet written when the window opens is dropped
                // with the other warm-up requests: its token may go unused.)
                let used = t.per_token.len() as u64;
                assert!(
                    used <= logins && used >= measured,
                    "{used} {logins} {measured}"
                );
            }
        }
    }
}

#[test]
fn users_that_leave_and_arrive_in_a_ramp_log_in_again() {
    let app = login::start();
    let (code, j, err) = run_journey(
        &app,
        "ramp",
        JOURNEY,
        &[
            "--stages",
            "0.4s:4, 0.2s:4, 0.3s:0, 0.2s:0, 0.4s:4, 0.2s:4",
            "-t",
            "1",
            "--think-time",
            "5ms",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let t = app.tally();
    let logins: u64 = t.logins.values().sum();
    assert_eq!(
        j["journey"]["users_started"].as_u64(),
        Some(logins),
        "{}",
        j["journey"]
    );
    assert!(
        logins >= 8,
        "four users, gone, then four new ones: {:?}",
        t.logins
    );
    assert_eq!(
        (t.unauthorized, t.mixups, t.empty_tokens),
        (0, 0, 0),
        "{t:?}"
    );
}

#[test]
fn in_the_open_loop_each_arrival_is_a_new_user_walking_one_iteration() {
    let app = login::start();
    let (code, j, err) = run_journey(
        &app,
        "open",
        &sequenced(JOURNEY),
        &["-R", "200", "-d", "2s", "-c", "8", "-t", "1"],
    );
    assert_eq!(code, 0, "{err}");
    let t = app.tally();
    let logins: u64 = t.logins.values().sum();
    let arrivals = j["journey"]["arrivals"].as_u64().unwrap();
    assert!((380..=400).contains(&arrivals), "200/s for 2 s: {arrivals}");
    assert_eq!(j["journey"]["users_started"].as_u64(), Some(arrivals));
    assert_eq!(
        logins, arrivals,
        "every arrival logs in once: {}",
        j["journey"]
    );
    // `me` and `cart` once each; an iteration whose next step would come after the window
    // ends there (the last few arrivals, on a slow machine).
    let used = t.per_token.len() as u64;
    let whole = t.per_token.values().filter(|&&n| n == 2).count() as u64;
    assert!(
        used <= arrivals && used + 3 >= arrivals,
        "{used} of {arrivals} used their token"
    );
    assert!(t.per_token.values().all(|&n| n <= 2), "{:?}", t.per_token);
    assert!(
        whole + 3 >= arrivals,
        "{whole} of {arrivals} walked the whole journey"
    );
    assert_eq!(
        (t.unauthorized, t.mixups, t.empty_tokens),
        (0, 0, 0),
        "{t:?}"
    );
    let sent = j["requests"]["sent"].as_u64().unwrap();
    assert!(
        sent <= 3 * arrivals && sent + 6 >= 3 * arrivals,
        "{sent} {arrivals}"
    );
    assert_eq!(
        j["requests"]["unsent"], 0,
        "steps due after the window are not due in it"
    );
    assert_eq!(j["journey"]["arrivals_unsent"], 0);
    let achieved = j["achieved_rps"].as_f64().unwrap();
    assert!(
        (195.0..=205.0).contains(&achieved),
        "the rate is of arrivals: {achieved}"
    );
    assert!(j["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|w| !w.as_str().unwrap().contains("short")));
    crate::quick::schema::assert_valid(&j, "an open-loop journey's result");
}

/// `text` with each request numbered in file order (`sequence = N`).
fn sequenced(text: &str) -> String {
    let mut n = 0;
    text.split("[[request]]\n")
        .enumerate()
        .map(|(k, part)| {
            if k == 0 {
                return part.to_string();
            }
            n += 1;
            format!("[[request]]\nsequence = {n}\n{part}")
        })
        .collect()
}

#[test]
fn a_capture_that_fails_skips_its_dependents_and_the_user_logs_in_again() {
    let app = login::start();
    let d = dir("failing");
    let file = write(
        &d,
        "journey.toml",
        &JOURNEY.replace("path = \"/login\"", "path = \"/login-html\""),
    );
    let (code, j, err) = volley_json(
        &[
            "run",
            &app.url("/"),
            "--requests-file",
            &file,
            "-c",
            "2",
            "-t",
            "1",
            "-n",
            "50",
        ],
        LIMIT,
    );
    assert_eq!(
        code, 1,
        "the capture check's implied threshold fails the run: {err}"
    );
    let t = app.tally();
    assert_eq!(t.requests, 50, "only logins went: {t:?}");
    assert_eq!(
        (t.unauthorized, t.empty_tokens),
        (0, 0),
        "nothing sent without its token"
    );
    assert_eq!(j["checks"]["capture"], 50, "{}", j["checks"]);
    assert_eq!(
        j["journey"]["captures_missed"]["not_json"], 50,
        "{}",
        j["journey"]
    );
    assert_eq!(
        j["journey"]["users_started"], 50,
        "each failed login starts the user over"
    );
    // Each user's later logins each come after skipping one step that needs the login's
    // token (50 − 2 users): the user starts over at the first.
    assert_eq!(j["requests"]["skipped"], 48);
    let skipped = |name| endpoint(&j, name)["requests"]["skipped"].as_u64().unwrap();
    assert_eq!(skipped("me") + skipped("cart"), 48);
    crate::quick::schema::assert_valid(&j, "a journey's result with failed captures");
}

#[test]
fn verify_walks_the_journey_as_one_user_and_shows_no_captured_value() {
    let app = login::start();
    let file = write(&dir("verify"), "journey.toml", JOURNEY);
    let url = app.url("/");
    let args = [
        "run",
        &url,
        "--requests-file",
        &file,
        "--verify",
        "-c",
        "1",
        "-n",
        "3",
    ];
    let out = volley(&args, LIMIT);
    let text = common::output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("verify login: POST /login HTTP/1.1"),
        "{text}"
    );
    assert!(
        text.contains("Set-Cookie: sid=<redacted>; Path=/; HttpOnly"),
        "{text}"
    );
    assert!(
        text.contains(r#"{\"accessToken\":\"{var.token}\""#),
        "{text}"
    );
    assert!(text.contains("verify cart: GET /cart HTTP/1.1"), "{text}");
    assert!(
        !text.contains("tok1") && !text.contains("sid=s1"),
        "no value shows: {text}"
    );
    let t = app.tally();
    assert_eq!(
        (t.unauthorized, t.cookies_ok),
        (0, 1 + 1),
        "verify's cart and the load's"
    );

    // A login whose capture fails: it says so, the dependents are not sent, no load.
    let app = login::start();
    let text = JOURNEY.replace("path = \"/login\"", "path = \"/login-html\"");
    let file = write(&dir("verify"), "failing.toml", &text);
    let url = app.url("/");
    let args = ["run", &url, "--requests-file", &file, "--verify", "-n", "3"];
    let out = volley(&args, LIMIT);
    let text = common::output_text(&out);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("FAILED: capture"), "{text}");
    assert!(
        text.contains("verify me: GET /me\n  not sent: no earlier step captured `{var.token}`"),
        "{text}"
    );
    assert_eq!(app.tally().requests, 1, "only the login went");
}

#[test]
fn in_the_open_loop_a_mix_after_the_login_keeps_its_weights() {
    let app = login::start();
    let args = ["-R", "300", "-d", "2s", "-c", "8", "-t", "2"];
    let (code, j, err) = run_journey(&app, "open-mix", JOURNEY, &args);
    assert_eq!(code, 0, "{err}");
    let me = endpoint(&j, "me")["requests"]["sent"].as_u64().unwrap() as f64;
    let cart = endpoint(&j, "cart")["requests"]["sent"].as_u64().unwrap() as f64;
    // Each arrival logs in and takes one request of the 1:1 mix.
    assert!(
        me + cart > 500.0 && (me - cart).abs() <= 4.0,
        "me {me}, cart {cart}"
    );
}

#[test]
fn a_user_whose_login_failed_logs_in_again_even_beside_steps_that_need_nothing() {
    let app = login::start();
    let text = r#"
[[request]]
name = "login"
sequence = 1
once = true
method = "POST"
path = "/login-flaky"
body = '{{"user": "u{user}"}}'
capture = { token = { json = "/accessToken" } }
[[request]]
name = "home"
sequence = 2
path = "/home"
[[request]]
name = "me"
sequence = 3
path = "/me"
headers = { Authorization = "Bearer {var.token}" }
"#;
    let (code, j, err) = run_journey(&app, "flaky", text, &["-c", "1", "-t", "1", "-n", "30"]);
    assert_eq!(
        code, 1,
        "one failed capture in 30 breaks the implied checks<=1%: {err}"
    );
    let t = app.tally();
    assert_eq!(
        t.logins.values().sum::<u64>(),
        2,
        "the failed login, then one more: {t:?}"
    );
    assert_eq!(j["journey"]["users_started"], 2, "{}", j["journey"]);
    assert!(
        endpoint(&j, "me")["requests"]["completed"]
            .as_u64()
            .unwrap()
            >= 9,
        "{}",
        j["endpoints"]
    );
    assert_eq!((t.unauthorized, t.empty_tokens), (0, 0), "{t:?}");
}

#[test]
fn an_empty_value_is_no_value() {
    let app = login::start();
    let text = JOURNEY.replace("path = \"/login\"", "path = \"/login-empty\"");
    let (code, j, err) = run_journey(&app, "empty", &text, &["-c", "1", "-t", "1", "-n", "10"]);
    assert_eq!(code, 1, "{err}");
    let t = app.tally();
    assert_eq!(
        (t.unauthorized, t.empty_tokens),
        (0, 0),
        "nothing sent with an empty token"
    );
    assert_eq!(
        j["journey"]["captures_missed"]["no_value"], 10,
        "{}",
        j["journey"]
    );
}

#[test]
fn mistakes_in_a_journey_name_the_file_line_and_what_to_do() {
    let app = login::start();
    let d = dir("errors");
    let cases: &[(&str, &str, &str)] = &[
        (
            "unknown.toml",
            "[[request]]\npath = \"/me\"\nheaders = { Authorization = \"Bearer {var.tokn}\" }\n[[request]]\npath = \"/login\"\ncapture = { token = { json = \"/t\" } }\n",
            "unknown.toml:3:37: [[request]] 1: headers: `{var.tokn}`: unknown variable `tokn`: no request captures it (the file captures: token)",
        ),
        (
            "first.toml",
            "[[request]]\nsequence = 1\npath = \"/me/{var.token}\"\n[[request]]\nsequence = 2\npath = \"/login\"\ncapture = { token = { json = \"/t\" } }\n",
            "the journey can never start: its first step, [[request]] 1, needs `{var.token}`",
        ),
        (
            "once.toml",
            "[[request]]\nonce = true\npath = \"/a/{var.token}\"\n[[request]]\nonce = true\npath = \"/login\"\ncapture = { token = { json = \"/t\" } }\n[[request]]\npath = \"/\"\n",
            "[[request]] 1: `{var.token}` is captured by no once step before it",
        ),
        (
            "head.toml",
            "[[request]]\nmethod = \"HEAD\"\npath = \"/\"\ncapture = { t = { regex = \"x\" } }\n",
            "a HEAD request's response has no body to capture from",
        ),
        (
            "weight.toml",
            "[[request]]\nonce = true\nweight = 2\npath = \"/\"\n[[request]]\npath = \"/\"\n",
            "weight.toml:3:10: [[request]] 1: weight: a `once` step runs once per user, before the mix: it has no weight",
        ),
        (
            "kind.toml",
            "[[request]]\npath = \"/\"\ncapture = { t = { json = \"/a\", header = \"X\" } }\n",
            "capture.t: `header` cannot be combined with `json`",
        ),
        (
            "path.toml",
            "[[request]]\npath = \"/\"\ncapture = { t = { json = \"$..a\" } }\n",
            "capture.t.json: `$..a`: `.` is not a key",
        ),
        (
            "group.toml",
            "[[request]]\npath = \"/\"\ncapture = { t = { regex = \"a(b)\", group = 2 } }\n",
            "capture.t.regex: group 2: the regex has groups 0 to 1",
        ),
        (
            "never.toml",
            "[[request]]\nonce = true\npath = \"/login\"\n[[request]]\npath = \"/\"\n[[request]]\npath = \"/r/{var.t}\"\ncapture = { t = { json = \"/t\" } }\n",
            "never.toml:6:1: [[request]] 3: can never be sent: `{var.t}` is captured only by steps that need it first",
        ),
        (
            "allonce.toml",
            "[[request]]\nonce = true\npath = \"/\"\n",
            "every request is `once = true`",
        ),
    ];
    for (name, text, want) in cases {
        let file = write(&d, name, text);
        let out = volley(
            &["run", &app.url("/"), "--requests-file", &file, "-n", "1"],
            LIMIT,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(want), "{name}: expected {want:?} in:\n{err}");
    }
    // With -R, each arrival is a new user walking the journey once.
    let file = write(&d, "open.toml", JOURNEY);
    let url = app.url("/");
    let out = volley(
        &["run", &url, "--requests-file", &file, "-R", "10", "-n", "5"],
        LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot be combined with -R and a journey"),
        "{err}"
    );
    let file = write(
        &d,
        "gap.toml",
        "[[request]]\npath = \"/login\"\ncapture = { t = { json = \"/t\" } }\n[[request]]\nname = \"me\"\npath = \"/me/{var.t}\"\n",
    );
    let out = volley(
        &[
            "run",
            &url,
            "--requests-file",
            &file,
            "-R",
            "10",
            "-d",
            "1s",
        ],
        LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("with -R each arrival is a new user who walks the journey once, and `me` needs `{var.t}`"), "{err}");
    assert_eq!(app.tally().requests, 0);
}
