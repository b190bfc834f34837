//! The human summary of one run, section by section: what was run and how, throughput, a
//! rate-stage run's seconds against their targets, the percentile table, the counters, the
//! server block, the warm-up, thresholds and warnings.

use std::fmt::Write as _;

use super::{format_elapsed, gc_line, plural, server_lines};
use volley_model::metric::Stat;
use volley_model::result::{Arrivals, LoadInfo, Mode, RunResult};
use volley_model::stats::Percentiles;
use volley_model::units::{bytes, micros_f, opt_micros, rate, seconds, thousands};

/// The human summary of one run.
pub fn summary(r: &RunResult) -> String {
    let mut o = String::new();
    header(&mut o, r);
    headlines(&mut o, r);
    throughput(&mut o, r);
    super::stages::over_time(&mut o, r);
    percentile_table(&mut o, r);
    setup_times(&mut o, r);
    super::endpoints::requests_file(&mut o, r);
    requests(&mut o, r);
    super::endpoints::checks(&mut o, r);
    super::endpoints::journey(&mut o, r);
    errors(&mut o, r);
    connections(&mut o, r);
    super::endpoints::table(&mut o, r);
    client(&mut o, r);
    super::shards::table(&mut o, r);
    server(&mut o, r);
    warmup(&mut o, r);
    thresholds(&mut o, r);
    warnings(&mut o, r);
    o
}

/// The target, how the load ran, and whether Ctrl-C cut it short.
fn header(o: &mut String, r: &RunResult) {
    // A workload has no one method: its file says what was sent.
    let what = match &r.target.requests_file {
        Some(f) => format!("{} ->", f.path),
        None => r.target.method.clone(),
    };
    let _ = writeln!(
        o,
        "volley {}  {what} {}  ({}){}",
        r.volley_version,
        r.target.url,
        r.target.addr,
        proxy_note(r)
    );
    let _ = writeln!(o, "{}", how_it_ran(r));
    if let Some(tls) = tls_line(r) {
        let _ = writeln!(o, "{tls}");
    }
    if let Some(h2) = h2_line(r) {
        let _ = writeln!(o, "{h2}");
    }
    if let Some(ws) = ws_line(r) {
        let _ = writeln!(o, "{ws}");
    }
    if let Some(g) = grpc_line(r) {
        let _ = writeln!(o, "{g}");
    }
    if let Some(h3) = h3_line(r) {
        let _ = writeln!(o, "{h3}");
    }
    if r.interrupted {
        let _ = writeln!(o, "INTERRUPTED: results cover the run up to the interruption (Ctrl-C, or SIGTERM: a pod evicted or deleted)");
    }
    let _ = writeln!(o);
}

/// `  through proxy http://127.0.0.1:3128 (CONNECT tunnel, from the environment)`: a proxied
/// run's numbers include the proxy, so its headline says so.
fn proxy_note(r: &RunResult) -> String {
    let Some(p) = &r.target.proxy else {
        return String::new();
    };
    let how = match p.mode.as_str() {
        "tunnel" => "CONNECT tunnel",
        _ => "requests forwarded",
    };
    let from = if p.source == "env" {
        ", from the environment"
    } else {
        ""
    };
    format!("  through proxy {} ({how}{from})", p.url)
}

/// `TLSv1.3 TLS13_AES_256_GCM_SHA384, ALPN http/1.1, 98.0 % of 1,204 handshakes resumed`.
fn tls_line(r: &RunResult) -> Option<String> {
    let t = r.target.tls.as_ref()?;
    let mut line = match (&t.version, &t.cipher) {
        (Some(v), Some(c)) => format!("{v} {c}"),
        // QUIC's TLS (HTTP/3) does not tell its cipher suite.
        (Some(v), None) => v.clone(),
        _ => "TLS: no handshake finished".to_string(),
    };
    match &t.alpn {
        Some(a) => {
            let _ = write!(line, ", ALPN {a}");
        }
        None if t.version.is_some() => line.push_str(", no ALPN"),
        None => {}
    }
    if let Some(f) = t.resumed_fraction {
        let _ = write!(
            line,
            ", {:.1} % of {} handshake{} resumed",
            f * 100.0,
            thousands(t.handshakes),
            plural(t.handshakes)
        );
    }
    if t.insecure {
        line.push_str(", certificate not verified (-k)");
    }
    Some(line)
}

/// `HTTP/2 (h2c): 8 streams per connection: the server allows 8 at once
/// (SETTINGS_MAX_CONCURRENT_STREAMS), fewer than --streams 32; 3 GOAWAYs`.
fn h2_line(r: &RunResult) -> Option<String> {
    let h = r.target.h2.as_ref()?;
    // A WebSocket over HTTP/2 names the HTTP/2 that carries it.
    let protocol = match &r.target.websocket {
        Some(w) => w.over.as_str(),
        None => r.target.protocol.as_deref().unwrap_or("h2"),
    };
    let n = h.streams_per_connection;
    let mut line = format!(
        "HTTP/2 ({protocol}): {n} stream{} per connection",
        plural(n)
    );
    if n < r.load.streams {
        let _ = write!(
            line,
            ": the server allows {n} at once (SETTINGS_MAX_CONCURRENT_STREAMS), fewer than \
             --streams {}",
            r.load.streams
        );
    }
    if h.goaways > 0 {
        let _ = write!(
            line,
            "; {} GOAWAY{}",
            thousands(h.goaways),
            plural(h.goaways)
        );
    }
    Some(line)
}

/// `HTTP/3 (QUIC v1): 4 connections, 8 streams per connection; 68,938 packets sent, 12 lost
/// (0.02 %); 0-RTT on 49 handshakes, accepted on 49`.
fn h3_line(r: &RunResult) -> Option<String> {
    let q = r.target.quic.as_ref()?;
    let n = q.streams_per_connection;
    let lost = if q.sent_packets > 0 {
        format!(
            "{} lost ({:.2} %)",
            thousands(q.lost_packets),
            q.lost_packets as f64 * 100.0 / q.sent_packets as f64
        )
    } else {
        "none lost".to_string()
    };
    let mut line = format!(
        "HTTP/3 (QUIC v{}): {} connection{}, {n} stream{} per connection; {} packets sent, {lost}",
        q.version,
        thousands(q.connections),
        plural(q.connections),
        plural(n),
        thousands(q.sent_packets),
    );
    if q.goaways > 0 {
        let _ = write!(
            line,
            "; {} GOAWAY{} (the streams each left unprocessed went on new connections)",
            thousands(q.goaways),
            plural(q.goaways)
        );
    }
    match &q.zero_rtt {
        Some(z) if z.offered == 0 => {
            line.push_str("; 0-RTT never offered (no handshake resumed a session allowing it)")
        }
        Some(z) => {
            let _ = write!(
                line,
                "; 0-RTT on {} handshake{}, accepted on {}",
                thousands(z.offered),
                plural(z.offered),
                thousands(z.accepted)
            );
        }
        None => {}
    }
    Some(line)
}

/// `gRPC helloworld.Greeter/SayHello (message 8 bytes): 0 OK ×9,990, 3 INVALID_ARGUMENT ×10
/// (first: 3 INVALID_ARGUMENT: name refused)`.
fn grpc_line(r: &RunResult) -> Option<String> {
    let g = r.target.grpc.as_ref()?;
    let mut line = format!("gRPC {}", g.method);
    // A requests file's messages are its own, each in the table of its name.
    if r.target.requests_file.is_none() {
        let n = g.message_bytes;
        let _ = write!(line, " (message {} byte{})", thousands(n), plural(n));
    }
    if g.status_codes.is_empty() {
        line.push_str(": no call ended");
        return Some(line);
    }
    let codes: Vec<String> = g
        .status_codes
        .iter()
        .map(|(code, n)| {
            let name = code
                .parse()
                .map_or("", volley_model::stats::transport::code_name);
            format!("{code} {name} ×{}", thousands(*n))
        })
        .collect();
    let _ = write!(line, ": {}", codes.join(", "));
    if let Some(first) = &g.first_error {
        let _ = write!(line, " (first: {first})");
    }
    Some(line)
}

/// `WebSocket: 4 upgrades (mean 0.21 ms), text messages of 5 bytes; 12 pings answered; 3
/// messages the server sent unasked; closed by the server: 1011 ×2 (first: 1011 (internal
/// error))`; over HTTP/2 `WebSocket over HTTP/2 (h2c): 4 upgrades (extended CONNECT, mean
/// 0.21 ms), …`.
fn ws_line(r: &RunResult) -> Option<String> {
    let w = r.target.websocket.as_ref()?;
    let over = match w.over.as_str() {
        "http/1.1" => String::new(),
        o => format!(" over HTTP/2 ({o})"),
    };
    let mut line = format!(
        "WebSocket{over}: {} upgrade{}",
        thousands(w.upgrades),
        plural(w.upgrades)
    );
    let how = if over.is_empty() {
        ""
    } else {
        "extended CONNECT, "
    };
    if let Some(us) = w.upgrade_mean_us {
        let _ = write!(line, " ({how}mean {:.2} ms)", us / 1000.0);
    }
    let _ = write!(line, ", {} messages", w.message_type);
    // A requests file's messages are its own, each in the table of its name.
    if r.target.requests_file.is_none() {
        let n = w.message_bytes;
        let _ = write!(line, " of {} byte{}", thousands(n), plural(n));
    }
    if w.pings > 0 {
        let _ = write!(
            line,
            "; {} ping{} answered",
            thousands(w.pings),
            plural(w.pings)
        );
    }
    if w.server_messages > 0 {
        let _ = write!(
            line,
            "; {} message{} the server sent unasked",
            thousands(w.server_messages),
            plural(w.server_messages)
        );
    }
    if !w.close_codes.is_empty() {
        let codes: Vec<String> = w
            .close_codes
            .iter()
            .map(|(code, n)| format!("{code} ×{}", thousands(*n)))
            .collect();
        let _ = write!(line, "; closed by the server: {}", codes.join(", "));
        if let Some(first) = &w.first_close {
            let _ = write!(line, " (first: {first})");
        }
    }
    Some(line)
}

/// `open loop at 2,000 req/s (uniform), 8 connections, 2 threads, 3 s after 1 s warm-up, ...`
fn how_it_ran(r: &RunResult) -> String {
    let l = &r.load;
    let mut how = load_shape(l);
    if l.think_time_s > 0.0 {
        let _ = write!(how, ", think time {}", seconds(l.think_time_s));
    }
    if l.mode == Mode::Ramp {
        let _ = write!(how, ", {} thread{}", l.threads, plural(l.threads));
    } else {
        let _ = write!(
            how,
            ", {} connection{}, {} thread{}",
            l.connections,
            plural(l.connections),
            l.threads,
            plural(l.threads)
        );
    }
    match (l.duration_s, l.requests) {
        (Some(d), _) => {
            let _ = write!(how, ", {}", seconds(d));
        }
        (None, Some(n)) => {
            let _ = write!(how, ", {} request{}", thousands(n), plural(n));
        }
        _ => {}
    }
    if l.warmup_s > 0.0 {
        let _ = write!(how, " after {} warm-up", seconds(l.warmup_s));
    }
    how.push_str(if l.keepalive {
        ", keep-alive"
    } else {
        ", new connection per request"
    });
    if l.pipeline > 1 {
        let _ = write!(how, ", pipeline {}", l.pipeline);
    }
    if r.target.body_bytes > 0 {
        let _ = write!(how, ", body {}", bytes(r.target.body_bytes));
    }
    how
}

/// The mode and its rate or users: `open loop at 2,000 req/s (uniform)`.
fn load_shape(l: &LoadInfo) -> String {
    match l.mode {
        Mode::Open => match l.stages_text() {
            Some(stages) => {
                format!(
                    "open loop in rate stages {stages} (mean {} req/s, {})",
                    rate(l.rate_rps.unwrap_or(0.0)),
                    l.arrivals.unwrap_or(Arrivals::Uniform)
                )
            }
            None => format!(
                "open loop at {} req/s ({})",
                rate(l.rate_rps.unwrap_or(0.0)),
                l.arrivals.unwrap_or(Arrivals::Uniform)
            ),
        },
        Mode::Ramp => match (&l.stages, l.spawn_rate) {
            (Some(st), _) => {
                let parts: Vec<String> = st
                    .iter()
                    .map(|s| format!("{}:{}", seconds(s.duration_s), thousands(s.users)))
                    .collect();
                format!("virtual users in stages {}", parts.join(", "))
            }
            (None, Some(r)) => format!(
                "{} virtual users, {} added per second",
                thousands(l.users.unwrap_or(0)),
                rate(r)
            ),
            (None, None) => format!("{} virtual users", thousands(l.users.unwrap_or(0))),
        },
        Mode::Closed => "closed loop".to_string(),
    }
}

/// Responses per second and bytes moved.
fn throughput(o: &mut String, r: &RunResult) {
    let _ = writeln!(
        o,
        "  Throughput   {} req/s   ({} responses in {})",
        rate(r.throughput_rps),
        thousands(r.requests.completed),
        format_elapsed(r.elapsed_s)
    );
    if let (Some(target), Some(sent)) = (r.load.rate_rps, r.achieved_rps) {
        let _ = writeln!(
            o,
            "  Rate         sent {} req/s of {} target ({:.1} %), over the send window",
            rate(sent),
            rate(target),
            sent / target * 100.0
        );
    }
    let el = r.elapsed_s.max(1e-9);
    let _ = writeln!(
        o,
        "  Transfer     received {} ({}/s), sent {}",
        bytes(r.bytes.received),
        bytes((r.bytes.received as f64 / el) as u64),
        bytes(r.bytes.sent)
    );
    let _ = writeln!(o);
}

/// The latency kinds the table shows: one unnamed column in closed loop (the table is
/// "Latency"; what it measures is the closed-loop warning's), corrected/service/lag in open
/// loop, where they differ.
/// Each open-loop column has a second header line saying what it measures: corrected latency
/// from the due time (`≥` when unsent requests make it a lower bound), service time from the
/// first byte written, send lag from when the request was due and had a free connection to its
/// write (volley's own delay; waiting for a busy connection is latency, not lag).
fn latency_columns(r: &RunResult) -> Vec<(&str, &str, &Percentiles)> {
    let mut cols: Vec<(&str, &str, &Percentiles)> = Vec::new();
    if r.load.mode != Mode::Open {
        cols.push(("", "", &r.latency_us));
    } else {
        let from = if r.latency_lower_bound {
            "≥, from due"
        } else {
            "from due"
        };
        cols.push(("corrected", from, &r.latency_us));
        cols.push(("service", "from write", &r.service_time_us));
        if let Some(lag) = &r.schedule_lag_us {
            cols.push(("send lag", "volley's", lag));
        }
    }
    cols
}

/// Connect, proxy tunnel and TLS handshake times, beside the request latencies and never
/// inside them (every connection of the run, warm-up included).
fn setup_times(o: &mut String, r: &RunResult) {
    let rows = [
        ("Connect", r.setup.connect_us.as_ref()),
        ("Proxy CONNECT", r.setup.proxy_connect_us.as_ref()),
        ("TLS handshake", r.setup.tls_handshake_us.as_ref()),
    ];
    let mut any = false;
    for (name, p) in rows {
        let Some(p) = p.filter(|p| p.max.is_some()) else {
            continue;
        };
        any = true;
        let _ = writeln!(
            o,
            "  {name:<14}p50 {} · p99 {} · max {}",
            opt_micros(p.p50),
            opt_micros(p.p99),
            opt_micros(p.max)
        );
    }
    if any {
        let _ = writeln!(o);
    }
}

/// Every percentile, the extremes, mean and stdev, one column per latency kind.
fn percentile_table(o: &mut String, r: &RunResult) {
    let cols = latency_columns(r);
    let mut head = format!("  {:<10}", "Latency");
    let mut what = format!("  {:<10}", "");
    for (name, means, _) in &cols {
        let _ = write!(head, "{name:>12}");
        let _ = write!(what, "{means:>12}");
    }
    let _ = writeln!(o, "{}", head.trim_end());
    if !what.trim().is_empty() {
        let _ = writeln!(o, "{}", what.trim_end());
    }
    let mut row = |label: &str, f: &dyn Fn(&Percentiles) -> String| {
        let _ = write!(o, "    {label:<8}");
        for (_, _, p) in &cols {
            let _ = write!(o, "{:>12}", f(p));
        }
        let _ = writeln!(o);
    };
    row("min", &|p| opt_micros(p.min));
    for s in Stat::PERCENTILES {
        row(s.name(), &|p| opt_micros(s.of(p).map(|v| v as u64)));
    }
    row("max", &|p| opt_micros(p.max));
    row("mean", &|p| {
        p.mean.map(micros_f).unwrap_or_else(|| "-".into())
    });
    row("stdev", &|p| {
        p.stdev.map(micros_f).unwrap_or_else(|| "-".into())
    });
    let _ = writeln!(o);
}

/// The request counters and the status codes, 4xx and 5xx flagged.
fn requests(o: &mut String, r: &RunResult) {
    let q = &r.requests;
    let _ = writeln!(
        o,
        "  Requests     sent {} · completed {} · errors {} · unfinished {} · unsent {}",
        thousands(q.sent),
        thousands(q.completed),
        thousands(q.errors),
        thousands(q.unfinished),
        thousands(q.unsent)
    );
    let status: Vec<String> = r
        .status_codes
        .iter()
        .map(|(code, n)| {
            let flag = if code.starts_with('4') || code.starts_with('5') {
                " (!)"
            } else {
                ""
            };
            format!("{code}: {}{flag}", thousands(*n))
        })
        .collect();
    let _ = writeln!(
        o,
        "  Status       {}",
        if status.is_empty() {
            "no responses".into()
        } else {
            status.join(" · ")
        }
    );
}

/// Errors by kind, the kinds that happened only.
fn errors(o: &mut String, r: &RunResult) {
    let e = &r.errors;
    let errs: Vec<String> = [
        ("connect", e.connect),
        ("timeout", e.timeout),
        ("reset", e.reset),
        ("protocol", e.protocol),
        ("closed", e.closed),
    ]
    .iter()
    .filter(|(_, n)| *n > 0)
    .map(|(k, n)| format!("{k} {}", thousands(*n)))
    .collect();
    let _ = writeln!(
        o,
        "  Errors       {}",
        if errs.is_empty() {
            "none".to_string()
        } else {
            errs.join(" · ")
        }
    );
}

/// Connections opened (the warm-up's apart) and closed by the server.
fn connections(o: &mut String, r: &RunResult) {
    let warm_conns = r.warmup.as_ref().map(|w| w.connections_opened).unwrap_or(0);
    let _ = writeln!(
        o,
        "  Connections  opened {}{} · closed by server {}",
        thousands(r.connections.opened),
        if warm_conns > 0 {
            format!(" (+{} in the warm-up)", thousands(warm_conns))
        } else {
            String::new()
        },
        thousands(r.connections.closed_by_server)
    );
}

/// The shortest measured window the client's cores are given for: its CPU time runs from t0
/// to the end of the drain, the window only to the last response, and a window of a few
/// milliseconds (or none: nothing answered) would turn that difference into "1000000 cores".
const MIN_CORES_WINDOW_S: f64 = 0.1;

/// What volley itself spent: a saturated client measures itself, not the server.
fn client(o: &mut String, r: &RunResult) {
    let c = &r.client;
    let completed = r.requests.completed;
    let cpu = c.cpu_user_s + c.cpu_sys_s;
    let cores = if r.elapsed_s >= MIN_CORES_WINDOW_S {
        format!(" = {:.2} cores", cpu / r.elapsed_s)
    } else {
        String::new()
    };
    let per_million = if completed > 0 {
        format!(
            ", {:.2} CPU-s per million responses",
            cpu / completed as f64 * 1e6
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        o,
        "  Client       CPU {:.2} s ({:.0}% user){cores}{per_million}, RSS {}",
        cpu,
        if cpu > 0.0 {
            c.cpu_user_s / cpu * 100.0
        } else {
            0.0
        },
        bytes(c.rss_max_bytes)
    );
}

/// The server block (`--pid`), labelled on its first line.
fn server(o: &mut String, r: &RunResult) {
    if let Some(srv) = &r.server {
        for (k, line) in server_lines(srv, r.requests.completed).iter().enumerate() {
            let label = if k == 0 { "Server" } else { "" };
            let _ = writeln!(o, "  {label:<13}{line}");
        }
        if let Some(g) = &srv.gc {
            let _ = writeln!(o, "  {:<13}{}", "GC", gc_line(g));
            if g.pause_count == 0 {
                if let Some(note) = &g.note {
                    let _ = writeln!(o, "  {:<13}note: {note}", "");
                }
            }
        }
        if let Some(p) = &srv.profile {
            for (k, line) in super::profile::profile_lines(p).iter().enumerate() {
                let label = if k == 0 { "Profile" } else { "" };
                let _ = writeln!(o, "  {label:<13}{line}");
            }
        }
        let off_cpu = srv.profile.as_ref().and_then(|p| p.off_cpu.as_ref());
        for (k, line) in off_cpu
            .map(super::offcpu::off_cpu_lines)
            .iter()
            .flatten()
            .enumerate()
        {
            let label = if k == 0 { "Off-CPU" } else { "" };
            let _ = writeln!(o, "  {label:<13}{line}");
        }
    }
}

/// The warm-up, said to be left out of every figure above; one cut short by Ctrl-C says how
/// long it ran of how long it was to run.
fn warmup(o: &mut String, r: &RunResult) {
    if let Some(w) = &r.warmup {
        // `duration_s` is how long it ran (rounded to the millisecond), `load.warmup_s` asked.
        let length = if w.duration_s + 0.001 < r.load.warmup_s {
            format!(
                "{:.1} s of {}, interrupted",
                w.duration_s,
                seconds(r.load.warmup_s)
            )
        } else {
            seconds(w.duration_s)
        };
        let _ = writeln!(
            o,
            "  Warm-up      {length}: {} responses, {} errors (excluded from everything above)",
            thousands(w.completed),
            thousands(w.errors)
        );
    }
}

/// Each threshold with what was measured; a broken one names the exit code it causes.
fn thresholds(o: &mut String, r: &RunResult) {
    if r.thresholds.is_empty() {
        return;
    }
    let _ = writeln!(o);
    let broken = r.thresholds.iter().filter(|t| !t.pass).count();
    let _ = writeln!(
        o,
        "  Thresholds   {} of {} passed{}",
        r.thresholds.len() - broken,
        r.thresholds.len(),
        if broken > 0 {
            " — BROKEN (exit code 1)"
        } else {
            ""
        }
    );
    for t in &r.thresholds {
        let shown = volley_model::metric::threshold::parse(&t.threshold)
            .map(|th| th.show(t.actual))
            .unwrap_or_else(|_| format!("{:?}", t.actual));
        let _ = writeln!(
            o,
            "    {} {:<20} measured {shown}{}",
            if t.pass { "pass" } else { "FAIL" },
            t.threshold,
            if t.implied {
                " (implied by the checks)"
            } else {
                ""
            }
        );
    }
}

/// The run's warnings, last, where they are read after the numbers they qualify.
/// The warnings that make a headline number untrustworthy, before any number.
fn headlines(o: &mut String, r: &RunResult) {
    let mut any = false;
    for w in r.warnings.iter().filter(|w| w.kind().is_headline()) {
        let _ = writeln!(o, "!! {}", w.text());
        any = true;
    }
    if any {
        let _ = writeln!(o);
    }
}

/// The other warnings, after the numbers.
fn warnings(o: &mut String, r: &RunResult) {
    let rest: Vec<_> = r
        .warnings
        .iter()
        .filter(|w| !w.kind().is_headline())
        .collect();
    if !rest.is_empty() {
        let _ = writeln!(o);
        for w in rest {
            let _ = writeln!(o, "  ! {w}");
        }
    }
}

#[cfg(test)]
mod tests;
