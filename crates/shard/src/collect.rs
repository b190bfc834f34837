//! `volley k8s collect JOB`: the RunResult of every index of an Indexed Job, read from its
//! pods' logs with `kubectl`, or the reason it is missing. Nothing here merges: a set with a
//! shard missing is reported incomplete, never merged partially (the command layer merges a
//! complete one).

use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;

use super::manifest::{SHORTFALL_ANNOTATION, THRESHOLDS_ANNOTATION};
use super::markers;
use super::pods::{self, Phase, PodState};
use volley_model::result::RunResult;

/// How volley calls `kubectl` (`$KUBECTL`, else `kubectl` on PATH; the kubeconfig is
/// kubectl's own: `$KUBECONFIG`, `~/.kube/config`).
#[derive(Debug, Clone)]
pub struct Kubectl {
    /// The program.
    pub program: String,
    /// `--namespace`, when given (else kubectl's current one).
    pub namespace: Option<String>,
}

/// Why nothing could be collected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CollectError {
    /// kubectl failed or could not be run (exit 2).
    #[error("`{command}` failed: {message}")]
    Kubectl {
        /// The command line.
        command: String,
        /// kubectl's error, or why it did not run.
        message: String,
    },
    /// The Job is not one `volley k8s` printed (exit 2).
    #[error("job {job}: {why}")]
    NotVolley {
        /// The Job's name.
        job: String,
        /// What is missing.
        why: String,
    },
    /// The Job has not finished (exit 3).
    #[error("job {job} has not finished: {active} pod(s) running, {succeeded} succeeded, {failed} failed; collect again when it has (`--wait 5m` waits for it)")]
    Running {
        /// The Job's name.
        job: String,
        /// Pods running.
        active: i32,
        /// Pods succeeded.
        succeeded: i32,
        /// Pods failed.
        failed: i32,
    },
}

/// One shard's result, read from its pod's log.
#[derive(Debug, Clone)]
pub struct Shard {
    /// Its index.
    pub index: u32,
    /// The pod it ran in.
    pub pod: String,
    /// The RunResult as the pod printed it.
    pub json: String,
    /// The same, read.
    pub result: RunResult,
}

/// An index without a usable result, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Missing {
    /// The index.
    pub index: u32,
    /// The pod that ran it, if any.
    pub pod: Option<String>,
    /// Why there is no result (Kubernetes' reason, or volley's last line).
    pub why: String,
    /// What the pod printed anyway (an interrupted run's partial RunResult), kept on disk.
    pub json: Option<String>,
}

/// Every index of the Job, found or missing.
#[derive(Debug, Clone)]
pub struct Collected {
    /// Shards in all (the Job's completions).
    pub count: u32,
    /// The `--threshold`s to check on the merged result (the Job's annotation).
    pub thresholds: Vec<String>,
    /// Whether a shortfall is accepted (`--allow-shortfall`).
    pub allow_shortfall: bool,
    /// The shards with a result, by index.
    pub shards: Vec<Shard>,
    /// The indexes without one.
    pub missing: Vec<Missing>,
}

impl Kubectl {
    fn command_line(&self, args: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        if let Some(ns) = &self.namespace {
            v.extend(["--namespace".to_string(), ns.clone()]);
        }
        v
    }

    /// Runs kubectl; its standard output, or its error as a [`CollectError::Kubectl`].
    fn run(&self, args: &[&str]) -> Result<String, CollectError> {
        let argv = self.command_line(args);
        let err = |message: String| CollectError::Kubectl {
            command: format!("{} {}", self.program, argv.join(" ")),
            message,
        };
        let out = Command::new(&self.program)
            .args(&argv)
            .output()
            .map_err(|e| err(format!("{e} (is kubectl installed and on PATH?)")))?;
        if !out.status.success() {
            // kubectl's last line says what went wrong; the lines above are client-go's log.
            let text = String::from_utf8_lossy(&out.stderr);
            let last = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            return Err(err(format!(
                "{} (exit {})",
                last.trim(),
                out.status.code().unwrap_or(-1)
            )));
        }
        String::from_utf8(out.stdout).map_err(|_| err("output is not UTF-8".into()))
    }

    fn job(&self, name: &str) -> Result<Job, CollectError> {
        let text = self.run(&["get", "job", name, "--output", "json"])?;
        serde_json::from_str(&text).map_err(|e| CollectError::NotVolley {
            job: name.into(),
            why: format!("kubectl's answer is not a Job: {e}"),
        })
    }

    fn pods(&self, job: &str) -> Result<Vec<PodState>, CollectError> {
        let selector = format!("job-name={job}");
        let text = self.run(&["get", "pods", "--selector", &selector, "--output", "json"])?;
        pods::parse_list(&text).map_err(|why| CollectError::NotVolley {
            job: job.into(),
            why,
        })
    }
}

/// The Job's shard count: its completions, when it is an Indexed Job.
fn shard_count(job: &Job, name: &str) -> Result<u32, CollectError> {
    let spec = job.spec.as_ref();
    let indexed = spec.and_then(|s| s.completion_mode.as_deref()) == Some("Indexed");
    let count = spec.and_then(|s| s.completions).filter(|c| *c > 0);
    match (indexed, count) {
        (true, Some(c)) => Ok(c as u32),
        _ => Err(CollectError::NotVolley {
            job: name.into(),
            why: "not an Indexed Job with completions (volley k8s prints one)".into(),
        }),
    }
}

/// Whether the Job has ended (a `Complete` or `Failed` condition that is true).
fn finished(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        })
}

fn running(job: &Job, name: &str) -> CollectError {
    let s = job.status.clone().unwrap_or_default();
    CollectError::Running {
        job: name.into(),
        active: s.active.unwrap_or(0),
        succeeded: s.succeeded.unwrap_or(0),
        failed: s.failed.unwrap_or(0),
    }
}

/// Collects every index of Job `name`, waiting up to `wait` for it to finish.
pub fn collect(k: &Kubectl, name: &str, wait: Duration) -> Result<Collected, CollectError> {
    let deadline = Instant::now() + wait;
    let job = loop {
        let job = k.job(name)?;
        if finished(&job) {
            break job;
        }
        if Instant::now() >= deadline {
            return Err(running(&job, name));
        }
        std::thread::sleep(Duration::from_secs(2).min(deadline - Instant::now()));
    };
    let count = shard_count(&job, name)?;
    let pods = k.pods(name)?;
    let annotation = |key: &str| {
        job.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .cloned()
    };
    let thresholds = match annotation(THRESHOLDS_ANNOTATION) {
        Some(text) => serde_json::from_str(&text).map_err(|e| CollectError::NotVolley {
            job: name.into(),
            why: format!("annotation {THRESHOLDS_ANNOTATION} is not a list of strings: {e}"),
        })?,
        None => Vec::new(),
    };
    let mut out = Collected {
        count,
        thresholds,
        allow_shortfall: annotation(SHORTFALL_ANNOTATION).as_deref() == Some("true"),
        shards: Vec::new(),
        missing: Vec::new(),
    };
    for index in 0..count {
        let mut mine: Vec<&PodState> = pods.iter().filter(|p| p.index == Some(index)).collect();
        // A pod that succeeded first, then one that ended (its log may hold a result).
        mine.sort_by_key(|p| (p.phase != Phase::Succeeded, p.exit_code.is_none()));
        match one_shard(k, index, count, &mine) {
            Ok(s) => out.shards.push(s),
            Err(m) => out.missing.push(m),
        }
    }
    Ok(out)
}

/// The result of index `index` from the first of its pods that has one.
fn one_shard(k: &Kubectl, index: u32, count: u32, pods: &[&PodState]) -> Result<Shard, Missing> {
    let mut missing = Missing {
        index,
        pod: None,
        why: "no pod ran it (the Job ended before it was created, or it was deleted)".into(),
        json: None,
    };
    for pod in pods {
        missing.pod = Some(pod.name.clone());
        match read_pod(k, pod, index, count) {
            Ok(s) => return Ok(s),
            Err((why, json)) => {
                missing.why = why;
                missing.json = json.or(missing.json.take());
            }
        }
    }
    Err(missing)
}

/// What one pod's log holds: its shard, or why it has none (and any partial JSON).
fn read_pod(
    k: &Kubectl,
    pod: &PodState,
    index: u32,
    count: u32,
) -> Result<Shard, (String, Option<String>)> {
    let said = |fallback: &str| pod.why.clone().unwrap_or_else(|| fallback.to_string());
    if pod.phase.unfinished() {
        return Err((
            format!("{} ({:?})", said("did not finish"), pod.phase),
            None,
        ));
    }
    let log = match k.run(&["logs", &pod.name, "--container", "volley"]) {
        Ok(l) => l,
        Err(e) => return Err((format!("{}; no log: {e}", said("no result")), None)),
    };
    let found = markers::extract(&log);
    let last = found.other.iter().rev().find(|l| !l.trim().is_empty());
    let Some(json) = found.json else {
        let why = match (&pod.why, last, found.truncated) {
            (_, _, true) => format!("{}; its result was cut short in the log", said("ended")),
            (Some(w), _, _) => w.clone(),
            (None, Some(l), _) => l.trim().to_string(),
            (None, None, _) => "printed no result".into(),
        };
        return Err((why, None));
    };
    let result = RunResult::from_json(&json)
        .map_err(|e| (format!("its result is not a volley RunResult: {e}"), None))?;
    let shard = result.shard.as_ref().map(|s| (s.index, s.count));
    if shard != Some((index as u64, count as u64)) {
        let got = shard.map_or("no --shard".to_string(), |(i, n)| format!("shard {i}/{n}"));
        return Err((
            format!("its result is {got}, not {index}/{count}"),
            Some(json),
        ));
    }
    if result.interrupted {
        let why = format!(
            "interrupted after {:.1} s ({})",
            result.elapsed_s,
            said("stopped by a signal: evicted, deleted or past the Job's deadline")
        );
        return Err((why, Some(json)));
    }
    Ok(Shard {
        index,
        pod: pod.name.clone(),
        json,
        result,
    })
}
