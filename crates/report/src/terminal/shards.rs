//! A merged result's shards (`volley merge`): each generator's rate, start and own CPU, so a
//! generator that lagged or saturated is seen beside the merged numbers.

use std::fmt::Write as _;

use volley_model::result::RunResult;
use volley_model::units::rate;

/// One line per shard, under `  Shards`.
pub fn table(o: &mut String, r: &RunResult) {
    if r.shards.len() < 2 {
        return;
    }
    let _ = writeln!(
        o,
        "\n  Shards       {} generators merged (each: rate, start, its own CPU)",
        r.shards.len()
    );
    for (k, s) in r.shards.iter().enumerate() {
        let who = s
            .index
            .map_or(format!("#{k}"), |i| format!("{i}/{}", r.shards.len()));
        let late = s.start_late_us.map_or(String::new(), |l| {
            format!(" · started {:.1} ms late", l as f64 / 1e3)
        });
        let sent = match (s.achieved_rps, s.throughput_rps) {
            (Some(a), _) => format!("{} req/s sent", rate(a)),
            (None, Some(t)) => format!("{} req/s", rate(t)),
            _ => "-".into(),
        };
        let cpu = s.client.cpu_user_s + s.client.cpu_sys_s;
        let _ = writeln!(
            o,
            "    {who:<8} {sent}{late} · CPU {cpu:.2} s, up to {:.0} % of a core{}",
            s.client.cpu_pct_max,
            if s.client.saturated {
                " · SATURATED: this generator was the limit"
            } else {
                ""
            }
        );
    }
}
