//! Virtual users (`--users`, `--spawn-rate`, `--stages`): the ramp they describe, and the
//! flags they cannot be combined with.

use std::time::Duration;

use super::{ConfigError, Flag, RunFlags};
use volley_model::units::{self, StageSpec};
use volley_plan::ramp::Ramp;
use volley_plan::RampSpec;

/// The rules for ramps: `--users` takes `-d` (which includes the ramp and may not be shorter
/// than it); `--stages` excludes `-d`, `-n` and `--users`; neither mixes with `-R`, `-c`, `-n`,
/// `--pipeline` or `--warmup`.
pub(super) fn ramp_from_flags(a: &RunFlags) -> Result<Option<RampSpec>, ConfigError> {
    if a.users.is_none() && a.stages.is_none() {
        if a.spawn_rate.is_some() {
            return Err(ConfigError::conflict(
                Flag::SpawnRate,
                &[Flag::Users],
                "needs --users",
            ));
        }
        return Ok(None);
    }
    let flag = if a.stages.is_some() {
        Flag::Stages
    } else {
        Flag::Users
    };
    let conflict = |other: &[Flag], text: &str| {
        ConfigError::conflict(flag, other, format!("cannot be combined with {text}"))
    };
    if a.rate.is_some() {
        return Err(conflict(
            &[Flag::Rate],
            "-R/--rate (virtual users are closed loop; use -c with -R for open loop)",
        ));
    }
    if a.connections.is_some() {
        return Err(conflict(
            &[Flag::Connections],
            "-c/--connections (each user holds one connection)",
        ));
    }
    if a.requests.is_some() {
        return Err(conflict(&[Flag::Requests], "-n/--requests"));
    }
    if a.warmup.is_some() {
        return Err(conflict(
            &[Flag::Warmup],
            "--warmup (make the first stage the warm-up)",
        ));
    }
    if a.pipeline > 1 {
        return Err(conflict(&[Flag::Pipeline], "--pipeline"));
    }
    match &a.stages {
        Some(spec) => {
            if a.users.is_some() || a.spawn_rate.is_some() {
                return Err(conflict(
                    &[Flag::Users, Flag::SpawnRate],
                    "--users/--spawn-rate (the stages say how many users, when)",
                ));
            }
            if a.duration.is_some() {
                return Err(conflict(
                    &[Flag::Duration],
                    "-d/--duration (the stages' durations add up to the run)",
                ));
            }
            stages(spec).map(Some)
        }
        None => users(a).map(Some),
    }
}

fn stages(spec: &str) -> Result<RampSpec, ConfigError> {
    let stages: Vec<StageSpec> =
        units::parse_stages(spec).map_err(|m| ConfigError::flag(Flag::Stages, m))?;
    let ramp = Ramp::from_stages(&stages);
    if ramp.max_users() == 0 {
        return Err(ConfigError::flag(Flag::Stages, "no stage has any users"));
    }
    check_users(ramp.max_users(), Flag::Stages)?;
    Ok(RampSpec {
        ramp,
        users: None,
        spawn_rate: None,
        stages: Some(stages),
    })
}

fn users(a: &RunFlags) -> Result<RampSpec, ConfigError> {
    let users = a.users.unwrap_or(0);
    if users == 0 {
        return Err(ConfigError::flag(Flag::Users, "must be at least 1"));
    }
    check_users(users, Flag::Users)?;
    let spawn_rate = match &a.spawn_rate {
        Some(r) => {
            let v = units::parse_decimal(r).map_err(|m| ConfigError::flag(Flag::SpawnRate, m))?;
            if v <= 0.0 {
                return Err(ConfigError::flag(
                    Flag::SpawnRate,
                    "must be above 0 users per second",
                ));
            }
            Some(v)
        }
        None => None,
    };
    // Without a spawn rate every user starts at once (like k6's --vus).
    let ramp_s = spawn_rate.map_or(0.0, |r| users as f64 / r);
    let total = match a.duration {
        Some(d) if d.as_secs_f64() + 1e-9 < ramp_s => {
            return Err(ConfigError::flag(
                Flag::Duration,
                format!(
                    "{} s is shorter than the ramp: {users} users at {} per second take {ramp_s:.1} s (-d includes the ramp)",
                    d.as_secs_f64(),
                    spawn_rate.unwrap_or(0.0)
                ),
            ))
        }
        Some(d) => d,
        // No -d: the ramp plus 10 s at full strength.
        None => Duration::from_secs_f64(ramp_s + 10.0),
    };
    let ramp = Ramp::spawn(
        users,
        spawn_rate.unwrap_or(f64::INFINITY),
        total.as_nanos() as u64,
    );
    Ok(RampSpec {
        ramp,
        users: Some(users),
        spawn_rate,
        stages: None,
    })
}

fn check_users(users: u64, flag: Flag) -> Result<(), ConfigError> {
    if users > 1_000_000 {
        return Err(ConfigError::flag(flag, "more than 1,000,000 users"));
    }
    Ok(())
}
