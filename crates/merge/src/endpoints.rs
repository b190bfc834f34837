//! `endpoints[]` of shards (docs/contract.md, "Merging shards"): each named request's
//! histograms added bucket by bucket and its counters summed, by name, in the order names
//! first appear; a shard without a name contributes nothing to it.

use std::collections::BTreeMap;

use super::MergeError;
use volley_model::result::endpoint::{EndpointRequests, EndpointResult};
use volley_model::result::RunResult;
use volley_model::stats::histogram::{decode, encode, Hist};
use volley_model::stats::Percentiles;

/// The shards' named requests, merged.
pub(super) fn merge(inputs: &[(String, RunResult)]) -> Result<Vec<EndpointResult>, MergeError> {
    let mut out: Vec<(EndpointResult, Hist, Hist)> = Vec::new();
    for (path, r) in inputs {
        for e in &r.endpoints {
            let dec = |which: &str, text: &str| {
                decode(text).map_err(|m| MergeError::Input {
                    path: path.clone(),
                    message: format!("endpoints[{}].{which}: {m}", e.name),
                })
            };
            let latency = dec("latency_hdr", &e.latency_hdr)?;
            let service = dec("service_time_hdr", &e.service_time_hdr)?;
            match out.iter_mut().find(|(m, _, _)| m.name == e.name) {
                Some((m, l, s)) => {
                    let _ = l.add(&latency);
                    let _ = s.add(&service);
                    add(m, e);
                }
                None => out.push((e.clone(), latency, service)),
            }
        }
    }
    Ok(out
        .into_iter()
        .map(|(mut m, l, s)| {
            m.latency_us = Percentiles::of(&l);
            m.service_time_us = Percentiles::of(&s);
            m.latency_hdr = encode(&l);
            m.service_time_hdr = encode(&s);
            m
        })
        .collect())
}

/// Adds `e`'s counters to `m`'s.
fn add(m: &mut EndpointResult, e: &EndpointResult) {
    let (a, b) = (&mut m.requests, &e.requests);
    *a = EndpointRequests {
        sent: a.sent + b.sent,
        completed: a.completed + b.completed,
        errors: a.errors + b.errors,
        failed: a.failed + b.failed,
        unfinished: a.unfinished + b.unfinished,
        failed_checks: volley_model::result::add_counts(a.failed_checks, b.failed_checks),
        skipped: volley_model::result::add_counts(a.skipped, b.skipped),
    };
    sum_into(&mut m.status_codes, &e.status_codes);
    sum_into(&mut m.checks, &e.checks);
    m.errors.merge(&e.errors);
}

fn sum_into(a: &mut BTreeMap<String, u64>, b: &BTreeMap<String, u64>) {
    for (k, v) in b {
        *a.entry(k.clone()).or_insert(0) += v;
    }
}
