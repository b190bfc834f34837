//! The plan: the load spec ([`spec`]) and the pure decisions made from it before the engine
//! starts — each thread's share of connections, requests and rate, the pacer that says when
//! requests are due, virtual-user ramps, and the request bytes.

pub mod journey;
pub mod pacer;
pub mod proxy;
pub mod ramp;
pub mod rate;
pub mod request;
pub mod shard;
pub mod spec;
pub mod workload;

pub use pacer::{Due, Pacer};

/// The variable that sets the open loop's least spacing of timed wake-ups once a worker is busy,
/// in µs (docs/contract.md, "Phases and time"; 0: off).
pub const WAKE_QUANTUM_VAR: &str = "VOLLEY_WAKE_QUANTUM_US";
pub use proxy::{Proxy, ProxyMode, ProxySource};
pub use request::{Mix, MixRequest, RequestTemplate};
pub use spec::{
    GrpcSpec, H2Spec, HttpVersion, IoBackend, IoChoice, LoadSpec, RampSpec, Scheme, Target,
    TlsSpec, WsSpec, DEFAULT_H2_WINDOW,
};

use volley_model::result::Arrivals;

/// Thread `k`'s pacer of a run of `--rate-stages`: its requests of the whole schedule (of a
/// shard's: every N-th of the whole load's, from the shard's index), each due when the
/// integrated rate reaches its index.
fn staged(cfg: &LoadSpec, k: usize, seed: u64) -> Pacer {
    let stages = cfg.rate_stages.as_ref().expect("checked by the caller");
    let (threads, k) = (cfg.threads as u64, k as u64);
    let (offset, stride) = match cfg.shard {
        Some(s) => (s.index + s.count * k, s.count * threads),
        None => (k, threads),
    };
    let poisson = cfg.arrivals == Arrivals::Poisson;
    Pacer::staged(
        std::sync::Arc::new(stages.shape.clone()),
        (offset, stride),
        poisson,
        seed,
    )
}
use volley_model::units::StageSpec;

/// What one worker thread does.
#[derive(Debug, Clone)]
pub struct ThreadPlan {
    /// Connections owned by this thread, open from the start.
    pub connections: usize,
    /// Connection slots: `connections`, or with `--max-connections` this thread's share of
    /// the most the open loop may open on demand.
    pub slots: usize,
    /// Schedule of the measured phase.
    pub pacer: Pacer,
}

/// The whole run's plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// One entry per worker thread.
    pub threads: Vec<ThreadPlan>,
    /// The request every connection sends.
    pub template: RequestTemplate,
    /// `--requests-file`: the workload's requests compiled, with the run's seed.
    pub mix: Option<Mix>,
}

impl Plan {
    /// Splits the load over threads; `seed` drives Poisson arrivals.
    pub fn new(cfg: &LoadSpec, seed: u64) -> Self {
        let conns = pacer::split_evenly(cfg.connections as u64, cfg.threads);
        let slots = pacer::split_evenly(
            cfg.max_connections.unwrap_or(cfg.connections) as u64,
            cfg.threads,
        );
        // Closed loop with -n: each thread's share of requests follows its share of connections.
        let closed_limits: Vec<Option<u64>> = match cfg.requests {
            Some(n) => {
                let mut shares = vec![0u64; cfg.threads];
                let mut given = 0;
                for (k, c) in conns.iter().enumerate() {
                    shares[k] = n * c / cfg.connections as u64;
                    given += shares[k];
                }
                for share in shares.iter_mut().take((n - given) as usize) {
                    *share += 1;
                }
                shares.into_iter().map(Some).collect()
            }
            None => vec![None; cfg.threads],
        };
        let threads = (0..cfg.threads)
            .map(|k| {
                // A shard's constant schedule takes its place in the whole load's; its Poisson
                // process has a seed of its own (the shards' processes then superpose).
                let (phase, shard_seed) = match cfg.shard {
                    Some(s) => (
                        cfg.rate_rps.map_or(0, |r| s.phase_ns(r * s.count as f64)),
                        seed ^ workload::mix(0x5AD0_5AD0, s.index),
                    ),
                    None => (0, seed),
                };
                let pacer = match (cfg.rate_rps, cfg.arrivals) {
                    _ if cfg.rate_stages.is_some() => staged(cfg, k, shard_seed),
                    (None, _) => Pacer::closed(closed_limits[k]),
                    (Some(r), Arrivals::Uniform) => {
                        Pacer::constant(r, k, cfg.threads, cfg.requests).with_phase(phase)
                    }
                    (Some(r), Arrivals::Poisson) => {
                        Pacer::poisson(r, k, cfg.threads, cfg.requests, shard_seed)
                    }
                };
                ThreadPlan {
                    connections: conns[k] as usize,
                    slots: slots[k].max(conns[k]) as usize,
                    pacer,
                }
            })
            .collect();
        Plan {
            threads,
            template: RequestTemplate::build(cfg),
            mix: Mix::of(cfg, seed),
        }
    }
}
