//! The RunResult of one measurement, block by block, from what the engine, volley's own CPU
//! sampler and the server monitor produced (docs/contract.md says what every key means).

use std::collections::BTreeMap;

use super::{warnings, Context};
use sha2::{Digest, Sha256};
use volley_config::RunConfig;
use volley_engine::{EngineOutput, Route};
use volley_model::result::endpoint::{EndpointRequests, EndpointResult};
use volley_model::result::identity::LoadKey;
use volley_model::result::journey::JourneyResult;
use volley_model::result::*;
use volley_model::stats::endpoints::{EndpointStats, Endpoints};
use volley_model::stats::histogram::encode;
use volley_model::stats::journey::JourneyCounts;
use volley_model::stats::recorder::CHECK_NAMES;
use volley_model::stats::Percentiles;
use volley_model::sys::cpus;
use volley_model::units;
use volley_monitor::client::ClientReport;
use volley_monitor::gc;
use volley_monitor::procfs;
use volley_plan::workload::{Entry, Order};
use volley_plan::HttpVersion;

/// Everything a RunResult is made of.
pub(crate) struct Parts<'a> {
    /// The run as configured (a shard's: its own part of the load).
    pub cfg: &'a RunConfig,
    /// `--shard`: the whole load, whose identity the shard carries.
    pub whole: Option<&'a volley_plan::LoadSpec>,
    /// `--shard` / `--start-at`: the result's `shard` block, but its `config_hash`.
    pub shard: Option<ShardInfo>,
    /// Where the run connected, and whether over TLS.
    pub route: &'a Route,
    /// The seed Poisson arrivals used.
    pub seed: u64,
    /// Where it ran.
    pub ctx: &'a Context<'a>,
    /// What the engine measured.
    pub engine: &'a EngineOutput,
    /// Volley's own CPU and the machine's.
    pub client: ClientReport,
    /// The server monitor's window, when monitored.
    pub server: Option<ServerInfo>,
}

pub use super::client_check::ClientCheck;

impl Parts<'_> {
    /// The assembled RunResult, thresholds checked.
    pub fn result(self) -> RunResult {
        let out = self.engine;
        let c = &out.agg.counts;
        let load = &self.cfg.load;
        let lag = load.is_open().then(|| Percentiles::of(&out.agg.lag));
        let check = self.client_check(lag.as_ref());
        let throughput = if out.elapsed_s > 0.0 {
            c.completed as f64 / out.elapsed_s
        } else {
            0.0
        };
        let mut result = RunResult {
            schema: RUN_SCHEMA.to_string(),
            volley_version: env!("CARGO_PKG_VERSION").to_string(),
            argv: redact::argv(self.ctx.argv),
            started_at: humantime::format_rfc3339_micros(out.started_at).to_string(),
            interrupted: out.interrupted,
            env: self.env(),
            target: self.target(),
            load: self.load_info(),
            load_id: None,
            elapsed_s: (out.elapsed_s * 1e6).round() / 1e6,
            throughput_rps: (throughput * 100.0).round() / 100.0,
            achieved_rps: self.achieved_rps(),
            requests: self.requests(),
            bytes: Bytes {
                sent: c.bytes_sent,
                received: c.bytes_received,
            },
            status_codes: status_codes(c),
            errors: c.errors,
            checks: self.checks(),
            connections: Connections {
                opened: c.connections_opened,
                closed_by_server: c.closed_by_server,
                unsolicited: c.unsolicited,
                max_open: load
                    .max_connections
                    .map(|_| out.ends.iter().map(|e| e.max_active).sum()),
            },
            latency_us: Percentiles::of(&out.agg.latency),
            latency_lower_bound: out.latency_lower_bound,
            service_time_us: Percentiles::of(&out.agg.service),
            schedule_lag_us: lag.clone(),
            setup: SetupTimes::of(
                out.transport.connect.as_ref(),
                out.transport.handshake.as_ref(),
            )
            .with_tunnel(out.transport.tunnel.as_ref()),
            latency_hdr: encode(&out.agg.latency),
            service_time_hdr: encode(&out.agg.service),
            timeseries: self.timeseries(),
            client: self.client_info(&check),
            machine: Machine {
                samples: self.client.machine.clone(),
            },
            server: None,
            warmup: self.warmup(),
            warnings: warnings::of(self.cfg, out, &check, lag.as_ref(), self.server.as_ref()),
            thresholds: Vec::new(),
            shards: Vec::new(),
            endpoints: self.endpoints(),
            journey: self.journey_result(),
            shard: None,
        };
        result.load_id = Some(self.load_id(&result));
        result.shard = self.shard.clone().map(|mut s| {
            s.config_hash = result.load_id.clone().unwrap_or_default();
            s
        });
        result.server = self.server.map(|mut s| {
            if let Some(gc) = s.gc.as_mut() {
                correlate_gc(gc, out);
            }
            s
        });
        let headlines = warnings::headlines(self.cfg, &result, self.ctx);
        result.warnings.splice(0..0, headlines);
        result.thresholds = self
            .cfg
            .thresholds
            .iter()
            .map(|t| t.check(&result))
            .collect();
        result
    }

    fn env(&self) -> Env {
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .map(|s| s.trim().to_string());
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| procfs::parse_cpu_model(&t));
        Env {
            cpu_model,
            cores: cpus::online(),
            kernel,
            pinning: Pinning {
                client_cpus: self.ctx.client_cpus.to_string(),
                server_cpus: self.ctx.server_cpus.map(str::to_string).or_else(|| {
                    let pid = self.cfg.monitor.as_ref()?.pid;
                    server_affinity(pid, cpus::online())
                }),
            },
        }
    }

    /// What TLS negotiated (null for cleartext; the version and cipher are null when no
    /// handshake finished).
    fn tls_info(&self) -> Option<TlsInfo> {
        self.route.tls.as_ref()?;
        let t = &self.engine.transport;
        let seen = t.tls.clone().unwrap_or_default();
        Some(TlsInfo {
            version: seen.version,
            cipher: seen.cipher,
            alpn: seen.alpn,
            resumed_fraction: t.resumed_fraction().map(|f| (f * 1e4).round() / 1e4),
            handshakes: t.handshakes,
            insecure: self.cfg.load.tls.as_ref().is_some_and(|s| !s.verify),
            resumption: self.cfg.load.tls.as_ref().is_none_or(|s| s.resume),
            client_cert: self.cfg.load.tls.as_ref().is_some_and(|s| s.cert.is_some()),
        })
    }

    /// What the run spoke: `h3` with `--http3`, HTTP/2 when any connection did (over TLS `h2`,
    /// else `h2c`).
    fn protocol(&self) -> &'static str {
        if self.route.quic.is_some() {
            return "h3";
        }
        if self.cfg.load.ws.is_some() {
            return "websocket";
        }
        match (self.engine.transport.h2_connections > 0, &self.route.tls) {
            (false, _) => "http/1.1",
            (true, Some(_)) => "h2",
            (true, None) => "h2c",
        }
    }

    fn quic_info(&self) -> Option<QuicInfo> {
        let quic = self.route.quic.as_ref()?;
        let t = &self.engine.transport;
        Some(QuicInfo {
            version: 1,
            connections: t.h3_connections,
            streams_per_connection: self.cfg.load.h2.streams as u64,
            sent_packets: t.quic_sent_packets,
            lost_packets: t.quic_lost_packets,
            goaways: t.h2_goaways,
            zero_rtt: quic.zero_rtt.then_some(ZeroRtt {
                offered: t.zero_rtt_offered,
                accepted: t.zero_rtt_accepted,
            }),
        })
    }

    /// `--grpc`: the calls' statuses.
    fn grpc_info(&self) -> Option<GrpcInfo> {
        let spec = self.cfg.load.grpc.as_ref()?;
        let g = &self.engine.transport.grpc;
        Some(GrpcInfo {
            method: spec.method.clone(),
            message_bytes: spec.message_bytes,
            status_codes: g.codes.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
            first_error: g.first_error.clone(),
        })
    }

    /// `ws://`, `wss://`: what the WebSocket connections met.
    fn ws_info(&self) -> Option<WsInfo> {
        let spec = self.cfg.load.ws?;
        let w = &self.engine.transport.ws;
        Some(WsInfo {
            message_type: if spec.binary { "binary" } else { "text" }.into(),
            message_bytes: self.cfg.load.body.len() as u64,
            over: match self.cfg.load.http {
                HttpVersion::H2 => "h2",
                HttpVersion::H2c => "h2c",
                _ => "http/1.1",
            }
            .into(),
            upgrades: w.upgrades,
            upgrade_mean_us: w.upgrade.as_ref().map(|h| (h.mean() * 10.0).round() / 10.0),
            server_messages: w.server_messages,
            pings: w.pings,
            close_codes: w
                .close_codes
                .iter()
                .map(|(code, n)| (code.to_string(), *n))
                .collect(),
            first_close: w.close_sample.clone(),
        })
    }

    fn h2_info(&self) -> Option<H2Info> {
        let t = &self.engine.transport;
        if t.h2_connections == 0 {
            return None;
        }
        let streams = self.cfg.load.h2.streams as u64;
        let max = t.h2_max_streams.map(u64::from);
        Some(H2Info {
            connections: t.h2_connections,
            max_concurrent_streams: max,
            streams_per_connection: max.map_or(streams, |m| m.min(streams)),
            goaways: t.h2_goaways,
            window: u64::from(self.cfg.load.h2.window),
        })
    }

    fn target(&self) -> TargetInfo {
        let load = &self.cfg.load;
        TargetInfo {
            url: redact::url(&load.target.url).into_owned(),
            addr: self.route.endpoint.to_string(),
            method: load.method.clone(),
            body_bytes: load.body.len() as u64,
            protocol: Some(self.protocol().into()),
            h2: self.h2_info(),
            quic: self.quic_info(),
            websocket: self.ws_info(),
            grpc: self.grpc_info(),
            tls: self.tls_info(),
            unix_socket: load
                .target
                .unix_socket
                .as_ref()
                .map(|p| p.display().to_string()),
            proxy: load.target.proxy.as_ref().map(|p| ProxyInfo {
                url: p.shown.clone(),
                mode: p.mode.as_str().into(),
                source: p.source.as_str().into(),
            }),
            requests_file: load.workload.as_ref().map(|w| RequestsFileInfo {
                path: w.source.clone(),
                sha256: w.hash.clone(),
                requests: w.entries.len(),
                order: match w.order {
                    Order::Weighted => "weighted",
                    Order::Sequence => "sequence",
                }
                .into(),
                names: w.endpoints.len(),
            }),
        }
    }

    /// Each named request's results: every worker's numbers added up (`endpoints[]`). One
    /// pass over the entries (a file may hold 100,000 of them, under 101 names).
    fn endpoints(&self) -> Vec<EndpointResult> {
        let Some(w) = self.cfg.load.workload.as_ref() else {
            return Vec::new();
        };
        let mut all = Endpoints::default();
        for e in &self.engine.ends {
            all.merge(&e.endpoints);
        }
        let columns = w.data.as_ref().map_or(&[][..], |d| &d.columns[..]);
        let mut first: Vec<Option<&Entry>> = vec![None; w.endpoints.len()];
        let mut kinds: Vec<Vec<&'static str>> = vec![Vec::new(); w.endpoints.len()];
        for e in &w.entries {
            let Some(k) = e.endpoint.map(usize::from) else {
                continue;
            };
            first[k].get_or_insert(e);
            for kind in check_kinds(&e.checks) {
                if !kinds[k].contains(&kind) {
                    kinds[k].push(kind);
                }
            }
        }
        w.endpoints
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let none = EndpointStats::default();
                let s = all.stats.get(k).and_then(|s| s.as_deref()).unwrap_or(&none);
                // `other` of the overflow holds many templates: no one method and path.
                let entry = first[k].filter(|_| w.other != Some(k as u16));
                let mut r = endpoint_result(
                    name,
                    entry.map_or(String::new(), |e| e.method.clone()),
                    entry.map_or(String::new(), |e| {
                        e.path.text_with(columns, &w.journey.vars)
                    }),
                    s,
                );
                // Every check its requests have is listed, 0 when none failed (as at the top).
                for kind in &kinds[k] {
                    r.checks.entry(kind.to_string()).or_insert(0);
                }
                if !r.checks.is_empty() {
                    r.requests.failed_checks = Some(s.counts.failed_checks);
                }
                if w.is_journey() {
                    r.requests.skipped = Some(s.counts.skipped);
                }
                r
            })
            .collect()
    }

    /// The load's identity: a shard carries the whole load's (docs/contract.md, "Shards"), so
    /// its shards are one load and repetitions of a sharded run match each other.
    fn load_id(&self, result: &RunResult) -> String {
        match self.whole {
            None => self.load_key(result).id(),
            Some(whole) => {
                let mut as_whole = result.clone();
                as_whole.load = self.load_info_of(whole);
                self.load_key(&as_whole).id()
            }
        }
    }

    /// The per-second series; with `--rate-stages`, each second's target beside its `sent`
    /// (the requests the schedule had due in it).
    fn timeseries(&self) -> Vec<volley_model::stats::aggregate::TimePoint> {
        let mut series = self.engine.agg.series.clone();
        if let Some(stages) = self.cfg.load.rate_stages.as_ref() {
            // A shard writes every N-th request of the whole load: its share of the target.
            let share = self.cfg.load.shard.map_or(1.0, |s| s.count.max(1) as f64);
            let due = |t: f64| stages.shape.integral(t) / share;
            for p in &mut series {
                let from = p.t_s as f64;
                let n = due(from + p.interval_s) - due(from);
                p.target = Some((n * 10.0).round() / 10.0);
            }
        }
        series
    }

    fn load_info(&self) -> LoadInfo {
        self.load_info_of(&self.cfg.load)
    }

    /// What `load` was, as a result records it.
    fn load_info_of(&self, load: &volley_plan::LoadSpec) -> LoadInfo {
        let open = load.is_open();
        let ramp = load.ramp.as_ref();
        LoadInfo {
            mode: load.mode(),
            connections: load.connections as u64,
            max_connections: load.max_connections.map(|m| m as u64),
            threads: load.threads as u64,
            rate_rps: load.rate_rps,
            arrivals: open.then_some(load.arrivals),
            seed: (open && load.arrivals == Arrivals::Poisson).then_some(self.seed),
            duration_s: load.duration.map(|d| d.as_secs_f64()),
            requests: load.requests,
            warmup_s: load.warmup.as_secs_f64(),
            keepalive: load.keepalive,
            pipeline: load.pipeline as u64,
            streams: load.h2.streams as u64,
            timeout_s: load.timeout.as_secs_f64(),
            users: ramp.map(|r| r.ramp.max_users()),
            spawn_rate: ramp.and_then(|r| r.spawn_rate),
            stages: ramp.and_then(|r| r.stages.as_ref()).map(|st| {
                st.iter()
                    .map(|s| StageInfo {
                        duration_s: s.duration.as_secs_f64(),
                        users: s.users,
                    })
                    .collect()
            }),
            think_time_s: load.think_time.as_secs_f64(),
            rate_stages: load.rate_stages.as_ref().map(|r| {
                r.stages
                    .iter()
                    .map(|s| RateStageInfo {
                        duration_s: s.duration.as_secs_f64(),
                        rate_rps: s.rate_rps,
                    })
                    .collect()
            }),
        }
    }

    /// The load identity: what the result records of the load, and the request's headers and
    /// body (added only when there are some, so loads without them keep the ids of older
    /// results).
    fn load_key(&self, result: &RunResult) -> LoadKey {
        let load = &self.cfg.load;
        let mut key = LoadKey::of_result(result);
        // A credential's value does not change the load (a rotated token is the same test),
        // and hashing it would let a weak password be guessed offline from the id.
        let headers: Vec<String> = load
            .headers
            .iter()
            .map(|(n, v)| redact::arg(&format!("{}: {v}", n.to_ascii_lowercase())).into_owned())
            .collect();
        key.push_unless("headers", headers.join("\n"), "");
        let body = if load.body.is_empty() {
            String::new()
        } else {
            Sha256::digest(&load.body[..])
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        key.push_unless("body_sha256", body, "");
        // The proxy is part of the load (requests cross it); its credentials are not.
        let proxy = load.target.proxy.as_ref();
        key.push_unless(
            "proxy",
            proxy.map_or(String::new(), |p| {
                format!("{} {}", p.mode.as_str(), p.shown)
            }),
            "",
        );
        if let Some(w) = &self.cfg.load.workload {
            key.push("requests_sha256", w.hash.clone());
        }
        // The rate's shape, not only its mean (only when there is one: older ids stay valid).
        let stages = load.rate_stages.as_ref();
        key.push_unless(
            "rate_stages",
            stages.map_or(String::new(), |r| units::rate_stages_text(&r.stages)),
            "",
        );
        key
    }

    /// Open loop: requests written in the send window ÷ its length; a journey's rate is of
    /// arrivals (each a new user's iteration), so its arrivals that started.
    fn achieved_rps(&self) -> Option<f64> {
        let out = self.engine;
        let count = match self.journey() {
            true => out.ends.iter().map(|e| e.journey.arrivals).sum(),
            false => out.agg.counts.sent,
        };
        (self.cfg.load.is_open() && out.window_s > 0.0)
            .then(|| (count as f64 / out.window_s * 100.0).round() / 100.0)
    }

    fn requests(&self) -> Requests {
        let out = self.engine;
        let c = &out.agg.counts;
        Requests {
            sent: c.sent,
            completed: c.completed,
            errors: c.errors.total(),
            unfinished: out.ends.iter().map(|e| e.unfinished).sum(),
            unsent: out.ends.iter().map(|e| e.unsent).sum(),
            failed: c.failed(),
            failed_checks: self.cfg.load.declares_checks().then_some(c.failed_checks),
            skipped: self.journey().then_some(c.skipped),
        }
    }

    /// Whether the run's workload is a journey.
    fn journey(&self) -> bool {
        self.cfg
            .load
            .workload
            .as_ref()
            .is_some_and(|w| w.is_journey())
    }

    /// `journey` of the RunResult: what the users met.
    fn journey_result(&self) -> Option<JourneyResult> {
        let out = self.engine;
        self.journey().then(|| {
            let mut c = JourneyCounts::default();
            for e in &out.ends {
                c.merge(&e.journey);
            }
            JourneyResult::of(&c, out.agg.counts.skipped, self.cfg.load.is_open())
        })
    }

    /// Responses that failed each check (none without checks).
    fn checks(&self) -> BTreeMap<String, u64> {
        let c = &self.engine.agg.counts;
        let grpc = self.cfg.load.grpc.is_some();
        if !self.cfg.load.declares_checks() && !grpc {
            return BTreeMap::new();
        }
        // `capture` is a journey's: listed only when the file captures.
        let captures = self
            .cfg
            .load
            .workload
            .as_ref()
            .is_some_and(|w| !w.journey.vars.is_empty());
        // `json` is listed when a check reads the body's JSON.
        let load = &self.cfg.load;
        let json = !load.checks.json.is_empty()
            || load
                .workload
                .as_ref()
                .is_some_and(|w| w.entries.iter().any(|e| !e.checks.json.is_empty()));
        CHECK_NAMES
            .iter()
            .zip(c.checks.iter())
            .filter(|(k, _)| captures || **k != "capture")
            .filter(|(k, _)| grpc || **k != "grpc_status")
            .filter(|(k, _)| json || **k != "json")
            .map(|(k, n)| (k.to_string(), *n))
            .collect()
    }

    /// The client self-check over the sampled seconds.
    fn client_check(&self, lag: Option<&Percentiles>) -> ClientCheck {
        let capacity = self.cfg.load.threads.min(self.ctx.cores).max(1) as f64;
        ClientCheck::of(
            &self.client.samples,
            capacity,
            lag.and_then(|l| l.p99),
            self.client.busiest_others.clone(),
        )
    }

    fn client_info(&self, check: &ClientCheck) -> ClientInfo {
        let (user_s, sys_s, rss) = self.client.rusage;
        let elapsed_s = self.engine.elapsed_s;
        // Runs shorter than a sample still get their average as the peak.
        let window_avg_pct = if elapsed_s > 0.0 {
            (user_s + sys_s) / elapsed_s * 100.0
        } else {
            0.0
        };
        let samples = &self.client.samples;
        let start = if samples.is_empty() {
            window_avg_pct
        } else {
            0.0
        };
        let cpu_pct_max = samples.iter().map(|s| s.cpu_pct).fold(start, f64::max);
        ClientInfo {
            cpu_user_s: round3(user_s),
            cpu_sys_s: round3(sys_s),
            rss_max_bytes: rss,
            cpu_pct_max: (cpu_pct_max * 10.0).round() / 10.0,
            // Measured, not inferred: a late run is not a saturated one (its lag has its own
            // warning; a starved client its own headline).
            saturated: check.by_cpu,
            saturated_fraction: (check.fraction * 1000.0).round() / 1000.0,
            io: Some(self.engine.io),
            starved: check.starved,
            starved_fraction: (check.starved_fraction * 1000.0).round() / 1000.0,
            wait_pct_max: round1(check.wait_pct_max),
            busiest_others: check.busiest_others.clone(),
        }
    }

    fn warmup(&self) -> Option<Warmup> {
        let warmup = self.cfg.load.warmup;
        let w = &self.engine.agg.warmup;
        (warmup.as_nanos() > 0).then(|| Warmup {
            // How long it ran: shorter than asked when Ctrl-C came during it.
            duration_s: round3(self.engine.warmup_s),
            sent: w.sent,
            completed: w.completed,
            errors: w.errors.total(),
            connections_opened: w.connections_opened,
        })
    }
}

/// The names of the checks `c` holds (`checks {name: count}` keys).
fn check_kinds(c: &volley_plan::workload::Checks) -> Vec<&'static str> {
    let mut out = Vec::new();
    if !c.status.is_empty() {
        out.push("status");
    }
    if !c.body_contains.is_empty() {
        out.push("body_contains");
    }
    if c.body_regex.is_some() {
        out.push("body_regex");
    }
    if !c.headers.is_empty() {
        out.push("header");
    }
    if c.size.is_some() {
        out.push("size");
    }
    if !c.captures.is_empty() {
        out.push("capture");
    }
    out
}

/// A named request's numbers as they are written.
pub(crate) fn endpoint_result(
    name: &str,
    method: String,
    path: String,
    s: &EndpointStats,
) -> EndpointResult {
    EndpointResult {
        name: name.to_string(),
        method,
        path,
        requests: EndpointRequests {
            sent: s.counts.sent,
            completed: s.counts.completed,
            errors: s.counts.errors.total(),
            failed: s.failed,
            unfinished: s.unfinished,
            failed_checks: None,
            skipped: None,
        },
        status_codes: status_codes(&s.counts),
        errors: s.counts.errors,
        checks: s
            .checks_failed
            .iter()
            .map(|(k, n)| (k.to_string(), *n))
            .collect(),
        latency_us: Percentiles::of(&s.latency),
        service_time_us: Percentiles::of(&s.service),
        latency_hdr: encode(&s.latency),
        service_time_hdr: encode(&s.service),
    }
}

fn status_codes(c: &volley_model::stats::Counters) -> BTreeMap<String, u64> {
    c.status_codes()
        .into_iter()
        .map(|(s, n)| (s.to_string(), n))
        .collect()
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// The GC correlation: the requests at or above the run's p99.9 (each worker kept its
/// slowest) against the window's pauses.
fn correlate_gc(gc: &mut ServerGc, out: &EngineOutput) {
    if out.agg.latency.is_empty() {
        return;
    }
    let threshold_us = out.agg.latency.value_at_quantile(0.999);
    let slow: Vec<_> = out
        .ends
        .iter()
        .flat_map(|e| e.slowest.iter().copied())
        .collect();
    gc::summary::correlate(gc, &slow, threshold_us);
}

/// The CPUs `--pid` may run on, whoever pinned it (`taskset`, a container's cpuset), when they
/// are fewer than the machine's `online` ones (all of them: not pinned).
fn server_affinity(pid: i32, online: usize) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let list = procfs::parse_cpus_allowed(&status)?;
    let cpus = cpus::parse_list(&list).ok()?;
    (cpus.cpus.len() < online).then_some(list)
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}
