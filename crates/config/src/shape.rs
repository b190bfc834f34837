//! The shape of a plain closed or open loop from `volley run`'s flags: connections, the rate
//! (`-R`) or its stages (`--rate-stages`), and `--max-connections` (docs/contract.md, "Open
//! loop"), each checked and refused naming its flag.

use std::sync::Arc;
use std::time::Duration;

use super::flags::ArrivalsFlag;
use super::{ConfigError, Flag, RunFlags};
use volley_model::units;
use volley_plan::rate::RateStages;

/// `--max-connections`: open loop only, at least `-c`, at most a million.
pub(super) fn max_connections(
    a: &RunFlags,
    shape: &Shape,
    connections: usize,
) -> Result<Option<usize>, ConfigError> {
    let Some(max) = a.max_connections else {
        return Ok(None);
    };
    let why = if shape.rate_rps.is_none() {
        Some("needs an open-loop rate (-R): the closed loop keeps -c connections busy".to_string())
    } else if a.users.is_some() || a.stages.is_some() {
        Some("cannot be combined with --users/--stages".to_string())
    } else if max < connections as u64 {
        Some(format!(
            "{max} is fewer than the {connections} connections of -c"
        ))
    } else if max > 1_000_000 {
        Some("more than 1,000,000 connections".to_string())
    } else {
        None
    };
    match why {
        Some(m) => Err(ConfigError::flag(Flag::MaxConnections, m)),
        None => Ok(Some(max as usize)),
    }
}

/// The numbers that shape a plain closed or open loop, checked.
pub(super) struct Shape {
    pub(super) connections: u64,
    pub(super) rate_rps: Option<f64>,
    pub(super) rate_stages: Option<Arc<RateStages>>,
}

pub(super) fn shape(a: &RunFlags) -> Result<Shape, ConfigError> {
    let connections = a.connections.unwrap_or(10);
    if connections == 0 {
        return Err(ConfigError::flag(Flag::Connections, "must be at least 1"));
    }
    if connections > 1_000_000 {
        return Err(ConfigError::flag(
            Flag::Connections,
            "more than 1,000,000 connections",
        ));
    }
    if a.threads == Some(0) {
        return Err(ConfigError::flag(Flag::Threads, "must be at least 1"));
    }
    if a.duration.is_some() && a.requests.is_some() {
        return Err(ConfigError::conflict(
            Flag::Duration,
            &[Flag::Requests],
            "cannot be combined with -n/--requests (pick one)",
        ));
    }
    if a.duration == Some(Duration::ZERO) {
        return Err(ConfigError::flag(Flag::Duration, "must be longer than 0"));
    }
    if a.requests == Some(0) {
        return Err(ConfigError::flag(Flag::Requests, "must be at least 1"));
    }
    let rate_stages = rate_stages(a)?;
    let rate_rps = match &rate_stages {
        Some(s) => Some(s.mean_rps()),
        None => a.rate.as_deref().map(rate).transpose()?,
    };
    if a.arrivals == ArrivalsFlag::Poisson && rate_rps.is_none() {
        return Err(ConfigError::flag(
            Flag::Arrivals,
            "poisson needs an open-loop rate (-R or --rate-stages)",
        ));
    }
    if a.pipeline == 0 {
        return Err(ConfigError::flag(Flag::Pipeline, "must be at least 1"));
    }
    if a.pipeline > 1024 {
        return Err(ConfigError::flag(
            Flag::Pipeline,
            "more than 1024 requests outstanding per connection",
        ));
    }
    if a.pipeline > 1 && a.no_keepalive {
        return Err(ConfigError::flag(
            Flag::Pipeline,
            "needs keep-alive (drop --no-keepalive)",
        ));
    }
    if a.timeout.is_zero() {
        return Err(ConfigError::flag(Flag::Timeout, "must be longer than 0"));
    }
    Ok(Shape {
        connections,
        rate_rps,
        rate_stages,
    })
}

/// `--rate-stages`: its stages, checked; it replaces `-R`, `-d` and `-n`, and ramps the rate,
/// not users.
fn rate_stages(a: &RunFlags) -> Result<Option<Arc<RateStages>>, ConfigError> {
    let Some(text) = a.rate_stages.as_deref() else {
        return Ok(None);
    };
    let given = [
        (
            a.rate.is_some(),
            Flag::Rate,
            "-R/--rate (the stages are the rate)",
        ),
        (
            a.duration.is_some(),
            Flag::Duration,
            "-d/--duration (the stages are the duration)",
        ),
        (
            a.requests.is_some(),
            Flag::Requests,
            "-n/--requests (the stages say how many)",
        ),
        (
            a.users.is_some(),
            Flag::Users,
            "--users (it ramps the rate, not users)",
        ),
        (
            a.stages.is_some(),
            Flag::Stages,
            "--stages (it ramps the rate, not users)",
        ),
    ];
    if let Some((_, other, why)) = given.iter().find(|(g, _, _)| *g) {
        return Err(ConfigError::conflict(
            Flag::RateStages,
            &[*other],
            format!("cannot be combined with {why}"),
        ));
    }
    let stages =
        units::parse_rate_stages(text).map_err(|m| ConfigError::flag(Flag::RateStages, m))?;
    let stages = RateStages::new(stages);
    if stages.shape.total() < 1.0 {
        return Err(ConfigError::flag(
            Flag::RateStages,
            "the stages are due less than one request in all (a rate above 0 somewhere)",
        ));
    }
    Ok(Some(Arc::new(stages)))
}

fn rate(r: &str) -> Result<f64, ConfigError> {
    let v = units::parse_decimal(r).map_err(|m| ConfigError::flag(Flag::Rate, m))?;
    if v <= 0.0 {
        return Err(ConfigError::flag(
            Flag::Rate,
            "must be above 0 requests per second",
        ));
    }
    if v > 100_000_000.0 {
        return Err(ConfigError::flag(
            Flag::Rate,
            "more than 100M requests per second",
        ));
    }
    Ok(v)
}
