//! Watching a run while it happens: the dashboard (`--dashboard`, `--dashboard-addr`), the
//! OpenMetrics endpoint (`--metrics-addr`), remote write (`--prometheus-remote-write`) and
//! OTLP (`--otlp-endpoint`); docs/contract.md, "Watching a run live". [`observer`] turns each
//! finished second of the aggregator into a tick (scalars and the second's compressed HDR
//! histograms) and into the totals `/metrics` shows; [`feed`] keeps the ticks (bounded) for
//! pages that connect late or reload; [`http`] is the small server the dashboard and
//! `/metrics` listen with (Host guard, no CORS, bounded threads); [`dashboard`] serves the page
//! and its events behind the run's token, [`page`] is the page; [`metrics`] encodes the totals
//! with `prometheus-client`; [`push`] pushes them, as [`remote`] and [`otlp`] encode them
//! (`buckets`: their exponential histograms). Nothing here is on the engine's hot path: the
//! observer runs on the aggregator's thread once a second, and the servers and the pushes on
//! their own threads.

mod buckets;
pub mod dashboard;
pub mod feed;
pub mod http;
pub mod metrics;
pub mod observer;
pub mod otlp;
pub mod page;
pub mod push;
pub mod remote;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

pub use metrics::{Names, Totals};
pub use observer::LiveObserver;

/// How long the end of a run waits for connected pages to receive the final report.
pub const END_GRACE: Duration = Duration::from_secs(1);

/// Where the live views listen.
#[derive(Debug, Clone, Default)]
pub struct LiveOptions {
    /// The dashboard's address (`--dashboard`: 127.0.0.1, port 0).
    pub dashboard: Option<SocketAddr>,
    /// The `/metrics` address.
    pub metrics: Option<SocketAddr>,
    /// `--prometheus-remote-write`.
    pub remote_write: Option<remote::Target>,
    /// `--otlp-endpoint`.
    pub otlp: Option<otlp::Target>,
}

impl LiveOptions {
    /// True when no view was asked for.
    pub fn is_empty(&self) -> bool {
        self.dashboard.is_none()
            && self.metrics.is_none()
            && self.remote_write.is_none()
            && self.otlp.is_none()
    }
}

/// Why a live view could not start: names the flag.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {addr}: {source}")]
pub struct LiveError {
    /// The flag that asked for it.
    pub flag: &'static str,
    /// The address.
    pub addr: SocketAddr,
    /// What the system said.
    pub source: std::io::Error,
}

/// What the page shows before the first second: the run as asked for (redacted).
#[derive(Debug, Clone, Serialize)]
pub struct Meta {
    /// The run's id (the metrics' `run_id` label).
    pub run_id: String,
    /// What the page's title says (the URL, redacted).
    pub title: String,
    /// The command line, redacted.
    pub argv: Vec<String>,
    /// `closed` or `open` (or `ramp`).
    pub mode: String,
    /// `-R`, when given.
    pub target_rps: Option<f64>,
    /// `-d`, seconds, when given.
    pub duration_s: Option<f64>,
    /// `-c`.
    pub connections: usize,
    /// The bytes of ticks kept for a replay ([`feed::TICK_BYTES_CAP`]).
    pub replay_cap_bytes: usize,
}

/// The live views of one run.
pub struct Live {
    token: String,
    feed: Option<Arc<feed::Feed>>,
    totals: Arc<Mutex<Totals>>,
    dashboard: Option<http::Server>,
    metrics: Option<http::Server>,
    pushers: Vec<push::Pusher>,
    server: volley_monitor::server::LatestTick,
}

impl Live {
    /// Binds what `opts` asks for (before the load starts, so a taken address is an error
    /// before anything is sent).
    pub fn start(opts: &LiveOptions, meta: Meta, names: Names) -> Result<Live, LiveError> {
        let totals = Arc::new(Mutex::new(Totals {
            names: names.clone(),
            ..Totals::default()
        }));
        let token = random_hex(16);
        let (feed, dashboard) = match opts.dashboard {
            Some(addr) => {
                let feed = Arc::new(feed::Feed::default());
                feed.meta(&serde_json::to_string(&meta).expect("meta serializes"));
                let handler = dashboard::DashboardHandler {
                    token: token.clone(),
                    page: page::render(&meta.title),
                    feed: feed.clone(),
                };
                let server =
                    http::Server::start(addr, Arc::new(handler)).map_err(|source| LiveError {
                        flag: "--dashboard-addr",
                        addr,
                        source,
                    })?;
                (Some(feed), Some(server))
            }
            None => (None, None),
        };
        let pushers = start_pushers(opts, &meta.run_id, &totals)?;
        let metrics = match opts.metrics {
            Some(addr) => {
                let handler = metrics::MetricsHandler::new(&meta.run_id, names, totals.clone());
                Some(
                    http::Server::start(addr, Arc::new(handler)).map_err(|source| LiveError {
                        flag: "--metrics-addr",
                        addr,
                        source,
                    })?,
                )
            }
            None => None,
        };
        Ok(Live {
            token,
            feed,
            totals,
            dashboard,
            metrics,
            pushers,
            server: Default::default(),
        })
    }

    /// The dashboard's URL, with its token.
    pub fn dashboard_url(&self) -> Option<String> {
        self.dashboard
            .as_ref()
            .map(|s| format!("http://{}/?token={}", s.addr(), self.token))
    }

    /// Whether pages may be watching (the end hands them the report).
    pub fn has_dashboard(&self) -> bool {
        self.feed.is_some()
    }

    /// The metrics' URL.
    pub fn metrics_url(&self) -> Option<String> {
        self.metrics
            .as_ref()
            .map(|s| format!("http://{}/metrics", s.addr()))
    }

    /// The observer that feeds the views.
    pub fn observer(&self, target_rps: Option<f64>, cores: usize) -> LiveObserver {
        LiveObserver::new(
            self.feed.clone(),
            self.totals.clone(),
            target_rps,
            cores,
            self.server.clone(),
        )
    }

    /// A new measured run of the command begins (a capacity step): pages get a `run` event
    /// (`{index, title, target_rps}`) and draw its seconds from zero; the metrics start
    /// over under `names` (in `capacity` the same names: a counter reset; in `bench` the
    /// cell's scenario: the previous cell's series are no longer exported).
    pub fn begin_run(&self, index: usize, title: &str, names: Names, target_rps: Option<f64>) {
        if let Some(feed) = &self.feed {
            let json =
                serde_json::json!({"index": index, "title": title, "target_rps": target_rps});
            feed.event("run", &json.to_string());
        }
        // The last run's server second is not this run's.
        *self.server.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let mut t = self.totals.lock().unwrap_or_else(|e| e.into_inner());
        *t = Totals {
            names,
            target_rps,
            ..Totals::default()
        };
    }

    /// The command's progress (a capacity search's finished steps): pages show the latest.
    pub fn progress(&self, json: &str) {
        if let Some(feed) = &self.feed {
            feed.event("progress", json);
        }
    }

    /// Where the server monitor keeps its latest second for these views
    /// (`measure::Context::server_latest`).
    pub fn server_watch(&self) -> volley_monitor::server::LatestTick {
        self.server.clone()
    }

    /// The end of the metrics pushes: the last values (and remote write's stale markers) go,
    /// at most [`push::FINAL_TIMEOUT`]; what each push did. Call it before [`Live::finish`], so
    /// that a failed push can be a warning of the result the pages get.
    pub fn finish_push(&mut self) -> Vec<(push::Via, push::PushReport)> {
        // Told to stop together, so the ends' waits overlap.
        std::mem::take(&mut self.pushers)
            .into_iter()
            .map(|p| std::thread::spawn(move || (p.via(), p.finish())))
            .collect::<Vec<_>>()
            .into_iter()
            .filter_map(|t| t.join().ok())
            .collect()
    }

    /// The run is over: connected pages get the result and the report (`report_html`, the
    /// page `--html` writes) and become it; waits at most [`END_GRACE`] for them, then stops
    /// listening. Volley's exit is never held longer.
    pub fn finish<R: Serialize>(mut self, result: Option<&R>, report_html: Option<&str>) {
        self.finish_push();
        if let Some(feed) = &self.feed {
            #[derive(Serialize)]
            struct End<'a, R> {
                result: Option<&'a R>,
                report_html: Option<&'a str>,
            }
            let end = End {
                result,
                report_html,
            };
            feed.end(&serde_json::to_string(&end).expect("the end serializes"));
            feed.wait_readers(END_GRACE);
            feed.close();
        }
    }
}

/// The pushes `opts` asks for, of run `run_id`'s totals.
fn start_pushers(
    opts: &LiveOptions,
    run_id: &str,
    totals: &Arc<Mutex<Totals>>,
) -> Result<Vec<push::Pusher>, LiveError> {
    let error = |via: push::Via| {
        move |source| LiveError {
            flag: via.flag(),
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            source,
        }
    };
    let mut out = Vec::new();
    if let Some(t) = &opts.remote_write {
        let via = push::Via::RemoteWrite;
        let encoder = remote::SeriesNames::new(run_id);
        let p = push::Pusher::start(via, t.endpoint.clone(), encoder, totals.clone());
        out.push(p.map_err(error(via))?);
    }
    if let Some(t) = &opts.otlp {
        let via = push::Via::Otlp;
        let encoder = otlp::Otlp::new(t, run_id);
        let p = push::Pusher::start(via, t.endpoint.clone(), encoder, totals.clone());
        out.push(p.map_err(error(via))?);
    }
    Ok(out)
}

/// `n` random bytes as hex, from the operating system's generator.
pub fn random_hex(n: usize) -> String {
    use rand::RngCore;
    let mut bytes = vec![0u8; n];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
