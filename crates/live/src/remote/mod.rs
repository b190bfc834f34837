//! `--prometheus-remote-write URL`: the run's metrics pushed every [`PUSH_EVERY`] (remote
//! write 1.0: protobuf, snappy) by [`crate::push`], then once more at the end with a stale
//! marker on every series, so a run shorter than a scrape interval still lands in Prometheus
//! and its series end when the run does. Credentials come from the environment
//! ([`AUTH_ENV`]), never from the URL, which ends up in the result's `argv`.

pub(crate) mod native;
pub mod proto;

use std::time::{SystemTime, UNIX_EPOCH};

use prost::Message;

use super::metrics::{self, Totals, Value};
use super::push::{self, Encode, Endpoint, EndpointError, Via};
use proto::{Label, Sample, TimeSeries, WriteRequest};

pub use super::push::{PushReport, FINAL_TIMEOUT, PUSH_EVERY};

/// Where credentials come from: a bearer token, or a user name and password (Basic).
pub const AUTH_ENV: [&str; 3] = [
    "VOLLEY_REMOTE_WRITE_BEARER_TOKEN",
    "VOLLEY_REMOTE_WRITE_USERNAME",
    "VOLLEY_REMOTE_WRITE_PASSWORD",
];
/// Prometheus' stale marker: a NaN with this bit pattern.
pub const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

/// Where and how to push.
#[derive(Debug, Clone)]
pub struct Target {
    pub(crate) endpoint: Endpoint,
}

impl Target {
    /// Checks `url` (http or https, no credentials in it) and reads the credentials from
    /// the environment through `env`.
    pub fn new(url: &str, env: impl Fn(&str) -> Option<String>) -> Result<Target, EndpointError> {
        let instead = format!("set {} or {} and {}", AUTH_ENV[0], AUTH_ENV[1], AUTH_ENV[2]);
        push::check_url(Via::RemoteWrite, url, &instead)?;
        let authorization = match (env(AUTH_ENV[0]), env(AUTH_ENV[1]), env(AUTH_ENV[2])) {
            (Some(token), _, _) => Some(format!("Bearer {}", token.trim())),
            (None, Some(user), Some(pass)) => {
                use base64::Engine;
                let pair =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
                Some(format!("Basic {pair}"))
            }
            (None, Some(_), None) | (None, None, Some(_)) => {
                let why = format!("{} and {} go together", AUTH_ENV[1], AUTH_ENV[2]);
                return Err(EndpointError::new(Via::RemoteWrite, url, why));
            }
            (None, None, None) => None,
        };
        let mut headers: Vec<(String, String)> = [
            ("Content-Encoding", "snappy"),
            ("Content-Type", "application/x-protobuf"),
            ("X-Prometheus-Remote-Write-Version", "0.1.0"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        headers.extend(authorization.map(|a| ("Authorization".to_string(), a)));
        Ok(Target {
            endpoint: Endpoint {
                url: url.to_string(),
                headers,
            },
        })
    }
}

/// Remote write's encoding of the totals: the series and their labels.
pub(crate) struct SeriesNames {
    run_id: String,
}

impl Encode for SeriesNames {
    fn body(&self, t: &Totals, now: SystemTime, last: bool) -> Result<Vec<u8>, String> {
        let ms = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let request = self.request(t, ms, last.then_some(ms + 1));
        snap::raw::Encoder::new()
            .compress_vec(&request.encode_to_vec())
            .map_err(|e| format!("snappy: {e}"))
    }
}

impl SeriesNames {
    pub(crate) fn new(run_id: &str) -> Self {
        SeriesNames {
            run_id: run_id.to_string(),
        }
    }

    /// Labels sorted by name, as remote write requires.
    fn labels(&self, name: &str, extra: &[(&str, String)]) -> Vec<Label> {
        let mut l: Vec<(String, String)> = vec![
            ("__name__".into(), name.into()),
            ("run_id".into(), self.run_id.clone()),
        ];
        l.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
        l.sort();
        l.into_iter()
            .map(|(name, value)| Label { name, value })
            .collect()
    }

    /// The request for totals `t` at `ts`; with `stale_at`, each series also gets its stale
    /// marker then.
    fn request(&self, t: &Totals, ts: i64, stale_at: Option<i64>) -> WriteRequest {
        let stale = f64::from_bits(STALE_NAN);
        let timeseries = metrics::series(t)
            .into_iter()
            .map(|s| {
                let mut out = TimeSeries {
                    labels: self.labels(&s.name, &s.labels),
                    samples: vec![],
                    histograms: vec![],
                };
                match s.value {
                    Value::Counter(value) | Value::Gauge(value) => {
                        out.samples.push(Sample {
                            value,
                            timestamp: ts,
                        });
                        out.samples.extend(stale_at.map(|timestamp| Sample {
                            value: stale,
                            timestamp,
                        }));
                    }
                    Value::Histogram(h) => {
                        out.histograms.push(native::from_hdr(h, ts));
                        out.histograms
                            .extend(stale_at.map(|timestamp| proto::Histogram {
                                sum: stale,
                                timestamp,
                                schema: native::SCHEMA,
                                ..Default::default()
                            }));
                    }
                }
                out
            })
            .collect();
        WriteRequest { timeseries }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Names;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn authorization(t: &Target) -> Option<&str> {
        let h = &t.endpoint.headers;
        h.iter()
            .find(|(k, _)| k == "Authorization")
            .map(|(_, v)| v.as_str())
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
        assert_eq!(authorization(&t), Some("Bearer abc"));
        let t = Target::new(
            "http://h/w",
            env(&[
                ("VOLLEY_REMOTE_WRITE_USERNAME", "u"),
                ("VOLLEY_REMOTE_WRITE_PASSWORD", "p"),
            ]),
        )
        .unwrap();
        assert_eq!(authorization(&t), Some("Basic dTpw"));
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
