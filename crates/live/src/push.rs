//! The pushing thread of `--prometheus-remote-write` and `--otlp-endpoint`: every
//! [`PUSH_EVERY`] it encodes the totals the live observer updates once a second and POSTs
//! them, then once more at the end. The push never touches the run: a slow, refused or
//! flooding endpoint only costs pushes (each bounded by `PUSH_TIMEOUT`, its answer read up
//! to [`ANSWER_CAP`]), counted in [`PushReport`]. The endpoint's certificate is always
//! verified (the system's roots, or `SSL_CERT_FILE`; `-k` is for the target only); redirects
//! are not followed (they would take the credentials elsewhere).

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::metrics::Totals;

/// How often the totals are pushed.
pub const PUSH_EVERY: Duration = Duration::from_secs(2);
/// The longest a push may take (connect, send, answer).
pub(crate) const PUSH_TIMEOUT: Duration = Duration::from_secs(5);
/// The end's push waits at most this long.
pub const FINAL_TIMEOUT: Duration = Duration::from_secs(3);
/// The most of an answer that is read: a longer one fails the push.
pub const ANSWER_CAP: u64 = 64 * 1024;

/// Which push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// `--prometheus-remote-write`.
    RemoteWrite,
    /// `--otlp-endpoint`.
    Otlp,
}

impl Via {
    /// The flag that asks for it.
    pub fn flag(self) -> &'static str {
        match self {
            Via::RemoteWrite => "--prometheus-remote-write",
            Via::Otlp => "--otlp-endpoint",
        }
    }
}

/// Why an endpoint cannot be used (the message names the flag).
#[derive(Debug, thiserror::Error)]
#[error("{flag} {url}: {why}")]
pub struct EndpointError {
    /// The flag.
    pub flag: &'static str,
    /// The URL as given, without credentials.
    pub url: String,
    /// Why.
    pub why: String,
}

impl EndpointError {
    pub(crate) fn new(via: Via, url: &str, why: impl Into<String>) -> Self {
        EndpointError {
            flag: via.flag(),
            url: volley_model::result::redact::url(url).into_owned(),
            why: why.into(),
        }
    }
}

/// Checks that `url` is http or https, names a host and has no credentials in it (it is
/// written into every result); `instead` says where credentials go.
pub(crate) fn check_url(via: Via, url: &str, instead: &str) -> Result<(), EndpointError> {
    let err = |why: String| EndpointError::new(via, url, why);
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| err("not an http:// or https:// URL".into()))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Err(err(format!(
            "credentials do not go in the URL (it is written into every result): {instead}"
        )));
    }
    if authority.is_empty() {
        return Err(err("no host".into()));
    }
    Ok(())
}

/// Where a push goes: its URL and the headers every push carries (credentials among them:
/// `Debug` shows their names only).
#[derive(Clone)]
pub(crate) struct Endpoint {
    pub url: String,
    pub headers: Vec<(String, String)>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("Endpoint")
            .field("url", &volley_model::result::redact::url(&self.url))
            .field("headers", &names)
            .finish()
    }
}

/// What one kind of push sends, and how it reads the answers.
pub(crate) trait Encode: Send + 'static {
    /// The body of the push of totals `t` at `now`; `last` for the end's.
    fn body(&self, t: &Totals, now: SystemTime, last: bool) -> Result<Vec<u8>, String>;

    /// A 2xx answer's body: an error when it says that data was refused.
    fn accepted(&self, _answer: &[u8]) -> Result<(), String> {
        Ok(())
    }

    /// What a refusal's body (status not 2xx) says.
    fn refusal(&self, answer: &[u8]) -> String {
        text(answer)
    }
}

/// The first 200 characters of an answer, as text.
pub(crate) fn text(answer: &[u8]) -> String {
    String::from_utf8_lossy(answer)
        .trim()
        .chars()
        .take(200)
        .collect()
}

/// What the pushes did.
#[derive(Debug, Clone, Default)]
pub struct PushReport {
    /// Pushes the endpoint accepted.
    pub accepted: u64,
    /// Pushes that failed (refused, timed out, not 2xx).
    pub failed: u64,
    /// The last failure.
    pub last_error: Option<String>,
    /// The end's push was accepted.
    pub final_accepted: bool,
}

struct Shared {
    stop: Mutex<bool>,
    wake: Condvar,
    report: Mutex<PushReport>,
}

/// The pushing thread.
pub(crate) struct Pusher {
    via: Via,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Pusher {
    /// Starts pushing `totals` to `endpoint` as `encoder` encodes them.
    pub fn start(
        via: Via,
        endpoint: Endpoint,
        encoder: impl Encode,
        totals: Arc<Mutex<Totals>>,
    ) -> std::io::Result<Pusher> {
        let shared = Arc::new(Shared {
            stop: Mutex::new(false),
            wake: Condvar::new(),
            report: Mutex::new(PushReport::default()),
        });
        let thread = {
            let shared = shared.clone();
            let name = format!("volley-push-{}", via.flag().trim_start_matches("--"));
            std::thread::Builder::new()
                .name(name)
                .spawn(move || push_loop(&endpoint, &encoder, &totals, &shared))?
        };
        Ok(Pusher {
            via,
            shared,
            thread: Some(thread),
        })
    }

    /// Which push this is.
    pub fn via(&self) -> Via {
        self.via
    }

    /// Pushes the last values (at most [`FINAL_TIMEOUT`]) and stops.
    pub fn finish(mut self) -> PushReport {
        *self.shared.stop.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.shared.wake.notify_all();
        let deadline = Instant::now() + FINAL_TIMEOUT + Duration::from_millis(500);
        let mut stuck = false;
        if let Some(t) = self.thread.take() {
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            stuck = !t.is_finished();
            if !stuck {
                let _ = t.join();
            }
        }
        let mut r = self
            .shared
            .report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if stuck {
            // A push still in flight kept the end's from going: that is a failed push too.
            r.failed += 1;
            r.final_accepted = false;
            r.last_error = Some("the end's push did not go within its time".into());
        }
        r
    }
}

fn push_loop(endpoint: &Endpoint, encoder: &dyn Encode, totals: &Mutex<Totals>, shared: &Shared) {
    let agent = agent(endpoint.url.starts_with("https://"));
    loop {
        let stop = shared.stop.lock().unwrap_or_else(|e| e.into_inner());
        let (stop, _) = shared
            .wake
            .wait_timeout_while(stop, PUSH_EVERY, |s| !*s)
            .unwrap_or_else(|e| e.into_inner());
        let last = *stop;
        drop(stop);
        let body = {
            let t = totals.lock().unwrap_or_else(|e| e.into_inner());
            encoder.body(&t, SystemTime::now(), last)
        };
        let timeout = if last { FINAL_TIMEOUT } else { PUSH_TIMEOUT };
        let outcome = body.and_then(|b| post(&agent, endpoint, &b, encoder, timeout));
        let mut r = shared.report.lock().unwrap_or_else(|e| e.into_inner());
        match outcome {
            Ok(()) => {
                r.accepted += 1;
                r.final_accepted = last;
            }
            Err(e) => {
                r.failed += 1;
                r.last_error = Some(e);
            }
        }
        if last {
            return;
        }
    }
}

/// An HTTP client that verifies certificates against the system's roots (or
/// `SSL_CERT_FILE`), read only for an https endpoint (they cost milliseconds and memory),
/// and follows no redirect.
fn agent(https: bool) -> ureq::Agent {
    let roots: Vec<ureq::tls::Certificate<'static>> = if https {
        rustls_native_certs::load_native_certs()
            .certs
            .iter()
            .map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned())
            .collect()
    } else {
        Vec::new()
    };
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::new_with_certs(&roots))
        // The provider the target's TLS uses: no second crypto library.
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .build();
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .tls_config(tls)
        .user_agent(concat!("volley/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

/// One push: `body` POSTed with the endpoint's headers, the answer read up to [`ANSWER_CAP`].
fn post(
    agent: &ureq::Agent,
    endpoint: &Endpoint,
    body: &[u8],
    encoder: &dyn Encode,
    timeout: Duration,
) -> Result<(), String> {
    let mut req = agent.post(&endpoint.url);
    for (name, value) in &endpoint.headers {
        req = req.header(name, value);
    }
    let mut resp = req
        .config()
        .timeout_global(Some(timeout))
        .build()
        .send(body)
        .map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let answer = resp
        .body_mut()
        .with_config()
        .limit(ANSWER_CAP)
        .read_to_vec();
    let answer = match answer {
        Ok(a) => a,
        Err(ureq::Error::BodyExceedsLimit(_)) => {
            return Err(format!(
                "HTTP {status}: an answer over {} KiB, not read",
                ANSWER_CAP / 1024
            ))
        }
        Err(e) => return Err(format!("HTTP {status}: the answer: {e}")),
    };
    if (200..300).contains(&status) {
        encoder.accepted(&answer)
    } else {
        Err(format!("HTTP {status}: {}", encoder.refusal(&answer)))
    }
}
