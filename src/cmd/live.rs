//! The live-view flags shared by `run` (and the suite and capacity commands): `--dashboard`,
//! `--dashboard-addr`, `--metrics-addr`, `--prometheus-remote-write`, `--otlp-endpoint`.
//! docs/contract.md, "Watching a run live".

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use clap::Args;

use crate::config::RunConfig;
use crate::live::{random_hex, Live, LiveOptions, Meta, Names};
use crate::result::redact;

/// Watching a run while it happens.
#[derive(Debug, Args, Clone, Default)]
pub struct LiveArgs {
    /// Serve a live dashboard on 127.0.0.1 (a free port) while the run lasts; its URL, with a
    /// random token, is printed.
    #[arg(long)]
    pub dashboard: bool,

    /// Serve the dashboard on ADDR (`127.0.0.1:8080`, `:8080`, `[::1]:8080`; 0.0.0.0 only
    /// when other machines must see it: the token still guards it).
    #[arg(long, value_name = "ADDR")]
    pub dashboard_addr: Option<String>,

    /// Serve OpenMetrics text at http://ADDR/metrics while the run lasts (for Prometheus).
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<String>,

    /// Push the metrics to a Prometheus remote-write endpoint every 2 s, and at the end with
    /// stale markers. Credentials from VOLLEY_REMOTE_WRITE_BEARER_TOKEN, or
    /// VOLLEY_REMOTE_WRITE_USERNAME and VOLLEY_REMOTE_WRITE_PASSWORD; the certificate is
    /// always verified (system roots or SSL_CERT_FILE).
    #[arg(long, value_name = "URL")]
    pub prometheus_remote_write: Option<String>,

    /// Push the same metrics as OTLP/HTTP protobuf every 2 s and at the end, to URL/v1/metrics
    /// (an OpenTelemetry Collector, Grafana Alloy, Datadog, Honeycomb). Headers from
    /// OTEL_EXPORTER_OTLP_METRICS_HEADERS or OTEL_EXPORTER_OTLP_HEADERS (key=value,…), gzip
    /// with OTEL_EXPORTER_OTLP_[METRICS_]COMPRESSION=gzip; the certificate is always verified.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

impl LiveArgs {
    /// The addresses asked for; an error names the flag.
    pub(crate) fn options(&self) -> Result<LiveOptions, String> {
        let loopback = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
        let dashboard = match &self.dashboard_addr {
            Some(a) => Some(parse_addr(a).map_err(|e| format!("--dashboard-addr {a}: {e}"))?),
            None => self.dashboard.then_some(loopback),
        };
        let metrics = match &self.metrics_addr {
            Some(a) => Some(parse_addr(a).map_err(|e| format!("--metrics-addr {a}: {e}"))?),
            None => None,
        };
        let remote_write = match &self.prometheus_remote_write {
            Some(url) => Some(
                crate::live::remote::Target::new(url, |k| std::env::var(k).ok())
                    .map_err(|e| e.to_string())?,
            ),
            None => None,
        };
        let otlp = match &self.otlp_endpoint {
            Some(url) => Some(
                crate::live::otlp::Target::new(url, |k| std::env::var(k).ok())
                    .map_err(|e| e.to_string())?,
            ),
            None => None,
        };
        Ok(LiveOptions {
            dashboard,
            metrics,
            remote_write,
            otlp,
        })
    }
}

/// `HOST:PORT` with an address literal or `localhost`, `:PORT`, or `PORT` (both on 127.0.0.1).
pub(crate) fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    if let Ok(port) = s.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Some(port) = s.strip_prefix("localhost:") {
        let port = port
            .parse::<u16>()
            .map_err(|_| format!("`{port}` is not a port"))?;
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    s.parse::<SocketAddr>().map_err(|_| {
        "not an address: give HOST:PORT with an IP address or localhost (127.0.0.1:9090, \
         [::1]:9090, :9090)"
            .to_string()
    })
}

/// Starts the live views `args` asks for, for the run of `cfg`, and prints where they are;
/// `None` when none was asked for. `scenario` labels the metrics (`run`, `capacity`).
pub(crate) fn start(
    args: &LiveArgs,
    cfg: &RunConfig,
    argv: &[String],
    scenario: &str,
) -> Result<Option<Live>, String> {
    let opts = args.options()?;
    if opts.is_empty() {
        return Ok(None);
    }
    let load = &cfg.load;
    let meta = Meta {
        run_id: random_hex(8),
        title: redact::url(&load.target.url).into_owned(),
        argv: redact::argv(argv),
        mode: load.mode().as_str().to_string(),
        target_rps: load.rate_rps,
        duration_s: load.duration.map(|d| d.as_secs_f64()),
        connections: load.connections,
        replay_cap_bytes: crate::live::feed::TICK_BYTES_CAP,
    };
    let names = Names {
        scenario: scenario.into(),
        endpoint: if load.workload.is_some() {
            "*".into()
        } else {
            load.target.path.clone()
        },
    };
    let live = Live::start(&opts, meta, names).map_err(|e| e.to_string())?;
    announce(&live);
    Ok(Some(live))
}

/// Starts the live views of a suite (`volley bench`): titled by the suite file; each cell
/// labels its own metrics.
pub(crate) fn start_suite(
    args: &LiveArgs,
    suite: &std::path::Path,
    argv: &[String],
) -> Result<Option<Live>, String> {
    let opts = args.options()?;
    if opts.is_empty() {
        return Ok(None);
    }
    let meta = Meta {
        run_id: random_hex(8),
        title: format!("suite {}", suite.display()),
        argv: redact::argv(argv),
        mode: "suite".into(),
        target_rps: None,
        duration_s: None,
        connections: 0,
        replay_cap_bytes: crate::live::feed::TICK_BYTES_CAP,
    };
    let names = Names {
        scenario: String::new(),
        endpoint: String::new(),
    };
    let live = Live::start(&opts, meta, names).map_err(|e| e.to_string())?;
    announce(&live);
    Ok(Some(live))
}

fn announce(live: &Live) {
    if let Some(url) = live.dashboard_url() {
        stderrln!("volley: dashboard at {url}");
    }
    if let Some(url) = live.metrics_url() {
        stderrln!("volley: metrics at {url}");
    }
}

/// Ends the pushes of the live views (their last values, remote write's stale markers): the
/// warnings of those that failed.
pub(crate) fn end_push(live: &mut Live) -> Vec<crate::result::Warning> {
    use crate::live::push::Via;
    use crate::result::Warning;
    let warning = |via: Via| match via {
        Via::RemoteWrite => Warning::remote_write,
        Via::Otlp => Warning::otlp_export,
    };
    live.finish_push()
        .into_iter()
        .filter(|(_, r)| r.failed > 0)
        .map(|(via, r)| {
            let last = r.last_error.as_deref().unwrap_or("");
            warning(via)(r.failed, r.failed + r.accepted, last, r.final_accepted)
        })
        .collect()
}

/// Ends the live views of a run: the push's last values first (a failed push becomes a
/// warning of `result`), then the pages get the result and the report.
pub(crate) fn finish(mut live: Live, mut result: Option<&mut crate::result::RunResult>) {
    for w in end_push(&mut live) {
        // With a result, the summary shows it among the warnings.
        match result.as_deref_mut() {
            Some(res) => res.warnings.push(w),
            None => stderrln!("volley: warning: {}", w.text()),
        }
    }
    let result = result.as_deref();
    // The page becomes the report: the same page `--html` writes (rendered only for a page).
    let html = result.filter(|_| live.has_dashboard()).map(|r| {
        crate::report::Format::Html
            .reporter()
            .render(&crate::report::Report::single(r.clone()))
    });
    live.finish(result, html.as_deref());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_people_type() {
        assert_eq!(parse_addr("9090").unwrap().to_string(), "127.0.0.1:9090");
        assert_eq!(parse_addr(":9090").unwrap().to_string(), "127.0.0.1:9090");
        assert_eq!(
            parse_addr("localhost:9090").unwrap().to_string(),
            "127.0.0.1:9090"
        );
        assert_eq!(parse_addr("[::1]:9090").unwrap().to_string(), "[::1]:9090");
        assert_eq!(
            parse_addr("0.0.0.0:9090").unwrap().to_string(),
            "0.0.0.0:9090"
        );
        assert!(parse_addr("example.com:9090").is_err());
        assert!(parse_addr("127.0.0.1:99999").is_err());
    }
}
