//! `--prometheus-remote-write URL`: the run's metrics pushed every [`PUSH_EVERY`] (remote
//! write 1.0: protobuf, snappy), then once more at the end with a stale marker on every
//! series, so a run shorter than a scrape interval still lands in Prometheus and its series
//! end when the run does.
//!
//! The push never touches the run: it has its own thread, reads the totals the live observer
//! updates once a second, and a slow or refused endpoint only costs pushes, counted in
//! [`PushReport`]. The endpoint's certificate is always verified (the system's roots, or
//! `SSL_CERT_FILE`; `-k` is for the target only); credentials come from the environment
//! ([`AUTH_ENV`]), never from the URL, which ends up in the result's `argv`.

pub(crate) mod native;
pub mod proto;

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use prost::Message;

use super::metrics::{Names, Totals};
use proto::{Label, Sample, TimeSeries, WriteRequest};

/// How often the totals are pushed.
pub const PUSH_EVERY: Duration = Duration::from_secs(2);
/// The longest a push may take (connect, send, answer).
pub(crate) const PUSH_TIMEOUT: Duration = Duration::from_secs(5);
/// The end's push (last values and stale markers) waits at most this long.
pub const FINAL_TIMEOUT: Duration = Duration::from_secs(3);
/// Where credentials come from: a bearer token, or a user name and password (Basic).
pub const AUTH_ENV: [&str; 3] = [
    "VOLLEY_REMOTE_WRITE_BEARER_TOKEN",
    "VOLLEY_REMOTE_WRITE_USERNAME",
    "VOLLEY_REMOTE_WRITE_PASSWORD",
];
/// Prometheus' stale marker: a NaN with this bit pattern.
pub const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

/// Why the remote-write URL cannot be used (the message names the flag).
#[derive(Debug, thiserror::Error)]
#[error("--prometheus-remote-write {url}: {why}")]
pub struct RemoteWriteError {
    /// The URL as given (without credentials: one with them is refused).
    pub url: String,
    /// Why.
    pub why: String,
}

/// Where and how to push.
#[derive(Debug, Clone)]
pub struct Target {
    url: String,
    authorization: Option<String>,
}

impl Target {
    /// Checks `url` (http or https, no credentials in it) and reads the credentials from
    /// the environment through `env`.
    pub fn new(
        url: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Target, RemoteWriteError> {
        let err = |why: &str| RemoteWriteError {
            url: volley_model::result::redact::url(url).into_owned(),
            why: why.to_string(),
        };
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"))
            .ok_or_else(|| err("not an http:// or https:// URL"))?;
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if authority.contains('@') {
            return Err(err(&format!(
                "credentials do not go in the URL (it is written into every result): set {} or {} and {}",
                AUTH_ENV[0], AUTH_ENV[1], AUTH_ENV[2]
            )));
        }
        if authority.is_empty() {
            return Err(err("no host"));
        }
        let authorization = match (env(AUTH_ENV[0]), env(AUTH_ENV[1]), env(AUTH_ENV[2])) {
            (Some(token), _, _) => Some(format!("Bearer {}", token.trim())),
            (None, Some(user), Some(pass)) => {
                use base64::Engine;
                let pair =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
                Some(format!("Basic {pair}"))
            }
            (None, Some(_), None) | (None, None, Some(_)) => {
                return Err(err(&format!(
                    "{} and {} go together",
                    AUTH_ENV[1], AUTH_ENV[2]
                )))
            }
            (None, None, None) => None,
        };
        Ok(Target {
            url: url.to_string(),
            authorization,
        })
    }
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
    /// The end's push (last values and stale markers) was accepted.
    pub final_accepted: bool,
}

struct Shared {
    stop: Mutex<bool>,
    wake: Condvar,
    report: Mutex<PushReport>,
}

/// The pushing thread.
pub(crate) struct Pusher {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Pusher {
    /// Starts pushing the totals of run `run_id` to `target`.
    pub fn start(
        target: Target,
        run_id: &str,
        names: Names,
        totals: Arc<Mutex<Totals>>,
    ) -> std::io::Result<Pusher> {
        let shared = Arc::new(Shared {
            stop: Mutex::new(false),
            wake: Condvar::new(),
            report: Mutex::new(PushReport::default()),
        });
        totals.lock().unwrap_or_else(|e| e.into_inner()).names = names;
        let series = SeriesNames::new(run_id);
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("volley-remote-write".into())
                .spawn(move || push_loop(&target, &series, &totals, &shared))?
        };
        Ok(Pusher {
            shared,
            thread: Some(thread),
        })
    }

    /// Pushes the last values with stale markers (at most [`FINAL_TIMEOUT`]) and stops.
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

fn push_loop(target: &Target, series: &SeriesNames, totals: &Mutex<Totals>, shared: &Shared) {
    let agent = agent(target.url.starts_with("https://"));
    loop {
        let stop = shared.stop.lock().unwrap_or_else(|e| e.into_inner());
        let (stop, _) = shared
            .wake
            .wait_timeout_while(stop, PUSH_EVERY, |s| !*s)
            .unwrap_or_else(|e| e.into_inner());
        let last = *stop;
        drop(stop);
        let now = now_ms();
        let request = {
            let t = totals.lock().unwrap_or_else(|e| e.into_inner());
            series.request(&t, now, last.then_some(now + 1))
        };
        let timeout = if last { FINAL_TIMEOUT } else { PUSH_TIMEOUT };
        let outcome = post(&agent, target, &request, timeout);
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

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// An HTTP client that verifies certificates against the system's roots (or
/// `SSL_CERT_FILE`), read only for an https endpoint (they cost milliseconds and memory).
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
        .tls_config(tls)
        .user_agent(concat!("volley/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

fn post(
    agent: &ureq::Agent,
    target: &Target,
    request: &WriteRequest,
    timeout: Duration,
) -> Result<(), String> {
    let body = snap::raw::Encoder::new()
        .compress_vec(&request.encode_to_vec())
        .map_err(|e| format!("snappy: {e}"))?;
    let mut req = agent
        .post(&target.url)
        .header("Content-Encoding", "snappy")
        .header("Content-Type", "application/x-protobuf")
        .header("X-Prometheus-Remote-Write-Version", "0.1.0");
    if let Some(auth) = &target.authorization {
        req = req.header("Authorization", auth);
    }
    let mut resp = req
        .config()
        .timeout_global(Some(timeout))
        .build()
        .send(&body[..])
        .map_err(|e| e.to_string())?;
    let status = resp.status();
    if status.is_success() {
        return Ok(());
    }
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    let text: String = text.trim().chars().take(200).collect();
    Err(format!("HTTP {}: {text}", status.as_u16()))
}

/// The series volley pushes and their labels.
struct SeriesNames {
    run_id: String,
}

impl SeriesNames {
    fn new(run_id: &str) -> Self {
        SeriesNames {
            run_id: run_id.to_string(),
        }
    }

    /// Labels sorted by name, as remote write requires.
    fn labels(&self, name: &str, extra: &[(&str, &str)], names: Option<&Names>) -> Vec<Label> {
        let mut l: Vec<(String, String)> = vec![
            ("__name__".into(), name.into()),
            ("run_id".into(), self.run_id.clone()),
        ];
        if let Some(n) = names {
            l.push(("scenario".into(), n.scenario.clone()));
            l.push(("endpoint".into(), n.endpoint.clone()));
        }
        l.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        l.sort();
        l.into_iter()
            .map(|(name, value)| Label { name, value })
            .collect()
    }

    /// The request for totals `t` at `ts`; with `stale_at`, each series also gets its stale
    /// marker then.
    fn request(&self, t: &Totals, ts: i64, stale_at: Option<i64>) -> WriteRequest {
        let mut out = Vec::new();
        let float = |labels: Vec<Label>, value: f64| {
            let mut samples = vec![Sample {
                value,
                timestamp: ts,
            }];
            if let Some(s) = stale_at {
                samples.push(Sample {
                    value: f64::from_bits(STALE_NAN),
                    timestamp: s,
                });
            }
            TimeSeries {
                labels,
                samples,
                histograms: vec![],
            }
        };
        for (class, n) in super::metrics::status_classes(&t.counts) {
            out.push(float(
                self.labels(
                    "volley_requests_total",
                    &[("status_class", class)],
                    Some(&t.names),
                ),
                n as f64,
            ));
        }
        for (kind, n) in super::metrics::error_kinds(&t.counts.errors) {
            out.push(float(
                self.labels("volley_errors_total", &[("kind", kind)], None),
                n as f64,
            ));
        }
        for (name, value) in super::metrics::gauges(t) {
            out.push(float(self.labels(name, &[], None), value));
        }
        if let Some(gc) = t.server.as_ref().and_then(|s| s.gc) {
            out.push(float(
                self.labels("volley_server_gc_pauses_total", &[], None),
                gc.pause_count as f64,
            ));
            out.push(float(
                self.labels("volley_server_gc_pause_seconds_total", &[], None),
                gc.pause_total_ms / 1e3,
            ));
        }
        out.push(float(
            self.labels("volley_client_cpu_seconds_total", &[], None),
            t.client_cpu_s,
        ));
        for (name, h) in [
            ("volley_request_duration_seconds", &t.latency),
            ("volley_service_time_seconds", &t.service),
        ] {
            let mut histograms = vec![native::from_hdr(h, ts)];
            if let Some(s) = stale_at {
                histograms.push(proto::Histogram {
                    sum: f64::from_bits(STALE_NAN),
                    timestamp: s,
                    schema: native::SCHEMA,
                    ..Default::default()
                });
            }
            out.push(TimeSeries {
                labels: self.labels(name, &[], Some(&t.names)),
                samples: vec![],
                histograms,
            });
        }
        WriteRequest { timeseries: out }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn urls_and_credentials() {
        assert!(Target::new("http://127.0.0.1:9090/api/v1/write", env(&[])).is_ok());
        let e = Target::new("https://user:secret@example.com/w", env(&[])).unwrap_err();
        assert!(
            e.to_string().contains("credentials do not go in the URL"),
            "{e}"
        );
        assert!(
            !e.to_string().contains("secret"),
            "the message does not repeat them: {e}"
        );
        assert!(Target::new("ftp://x/", env(&[])).is_err());
        assert!(Target::new("http:///w", env(&[])).is_err());
        let t = Target::new(
            "http://h/w",
            env(&[("VOLLEY_REMOTE_WRITE_BEARER_TOKEN", "abc")]),
        )
        .unwrap();
        assert_eq!(t.authorization.as_deref(), Some("Bearer abc"));
        let t = Target::new(
            "http://h/w",
            env(&[
                ("VOLLEY_REMOTE_WRITE_USERNAME", "u"),
                ("VOLLEY_REMOTE_WRITE_PASSWORD", "p"),
            ]),
        )
        .unwrap();
        assert_eq!(t.authorization.as_deref(), Some("Basic dTpw"));
        assert!(Target::new("http://h/w", env(&[("VOLLEY_REMOTE_WRITE_USERNAME", "u")])).is_err());
    }

    #[test]
    fn the_last_request_ends_every_series() {
        let names = Names {
            scenario: "run".into(),
            endpoint: "/".into(),
        };
        let s = SeriesNames::new("r1");
        let mut t = Totals {
            names,
            ..Default::default()
        };
        t.latency.record(1_000).unwrap();
        t.counts.status[200] = 1;
        let req = s.request(&t, 1_000, Some(1_001));
        for ts in &req.timeseries {
            let names: Vec<&str> = ts.labels.iter().map(|l| l.name.as_str()).collect();
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(names, sorted, "labels sorted");
            assert_eq!(ts.labels[0].name, "__name__");
            let stale = ts
                .samples
                .last()
                .map(|s| s.value.to_bits())
                .or(ts.histograms.last().map(|h| h.sum.to_bits()));
            assert_eq!(stale, Some(STALE_NAN), "{:?}", ts.labels);
        }
        let ok = req
            .timeseries
            .iter()
            .find(|ts| ts.labels.iter().any(|l| l.value == "2xx"))
            .unwrap();
        assert_eq!(ok.samples[0].value, 1.0);
        let plain = s.request(&t, 1_000, None);
        assert!(plain
            .timeseries
            .iter()
            .all(|ts| ts.samples.len() + ts.histograms.len() == 1));
    }
}
