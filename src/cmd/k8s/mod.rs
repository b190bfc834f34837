//! `volley k8s URL [run flags] --shards N`: prints the Indexed Job that runs the load as N
//! shards on N nodes, started together; `volley k8s collect JOB` (in `collect`) merges what
//! they measured (docs/contract.md, "Kubernetes").

mod collect;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Args, Subcommand};

use super::ExitCode;
use crate::config::shard::MAX_SHARDS;
use crate::config::{RunConfig, RunFlags};
use crate::shard::files;
use crate::shard::manifest::{self, JobPlan, ManifestError, MAX_NAME};
use crate::shard::pod_args::{self, PodRun};
use crate::units::parse_duration;

pub use collect::CollectArgs;

/// `volley k8s` flags.
#[derive(Debug, Args, Clone)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct K8sArgs {
    /// `collect JOB`: merge the results of a finished Job.
    #[command(subcommand)]
    pub command: Option<K8sCommand>,

    /// The load (URL, -R, -c, -d, headers, ...), split N ways (absent with `collect`).
    #[command(flatten)]
    pub flags: Option<RunFlags>,

    /// Generators: one pod each, on different nodes.
    #[arg(long, value_name = "N", required = true, value_parser = clap::value_parser!(u32).range(1..=MAX_SHARDS as i64))]
    pub shards: Option<u32>,

    /// The generator image (built from the repository's Dockerfile) [default: volley:VERSION].
    #[arg(long, value_name = "IMG")]
    pub image: Option<String>,

    /// The Job's namespace.
    #[arg(long, value_name = "NS", default_value = "default")]
    pub namespace: String,

    /// The Job's name [default: volley-<UTC date>-<time>].
    // The help text shows `<…>` as written; rustdoc would read it as an HTML tag.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long)]
    pub name: Option<String>,

    /// Time from now to the shards' common start: long enough to apply the Job, schedule
    /// the pods and pull the image.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = parse_duration)]
    pub lead: Duration,

    /// CPU of each generator pod (request = limit), e.g. 2 or 1500m; volley uses as many
    /// threads unless -t says otherwise.
    #[arg(long, default_value = "1")]
    pub cpu: String,

    /// Memory of each generator pod (request = limit).
    #[arg(long, default_value = "256Mi")]
    pub memory: String,

    /// Run only on nodes with this label (KEY=VALUE; repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    pub node_selector: Vec<String>,
}

/// `volley k8s` subcommands.
#[derive(Debug, Subcommand, Clone)]
pub enum K8sCommand {
    /// Read the shards' results from a finished Job's pod logs (kubectl), check that every
    /// index has one, and write the merged RunResult and its report.
    Collect(CollectArgs),
}

/// Runs `volley k8s`: 0 printed, 2 bad flags.
pub(crate) fn execute(args: &K8sArgs, argv: Vec<String>) -> ExitCode {
    if let Some(K8sCommand::Collect(c)) = &args.command {
        return collect::execute(c, argv);
    }
    let Some(flags) = &args.flags else {
        stderrln!("volley k8s: a URL is required (volley k8s URL [run flags] --shards N)");
        return ExitCode::Usage;
    };
    match manifest_for(args, flags, &argv, SystemTime::now()) {
        Ok((plan, yaml)) => {
            crate::sys::files::stdout(&yaml);
            stderrln!(
                "volley k8s: job {} in namespace {}: {} shard{} starting at {} ({} s from now). Apply it at once: volley k8s ... | kubectl apply -f -\nvolley k8s: then: volley k8s collect {} --namespace {} --wait 10m",
                plan.name,
                plan.namespace,
                plan.shards,
                if plan.shards == 1 { "" } else { "s" },
                plan.start_at,
                args.lead.as_secs(),
                plan.name,
                plan.namespace
            );
            ExitCode::Ok
        }
        Err(msg) => {
            stderrln!("volley k8s: {msg}");
            ExitCode::Usage
        }
    }
}

/// Flags of `volley run` that cannot work in a generator pod, and why.
fn refused(f: &RunFlags) -> Option<(&'static str, &'static str)> {
    let local = "names something on this machine, which the pods do not have";
    [
        (f.pid.is_some(), "--pid", "the server's process is not in the generator pods (run `volley monitor` beside the server)"),
        (f.gc_log.is_some(), "--gc-log", local),
        (f.monitor_interval.is_some(), "--monitor-interval", "there is no --pid in a pod"),
        (f.unix_socket.is_some(), "--unix-socket", local),
        (f.cert.is_some(), "--cert", "a client certificate and its key belong in a Kubernetes Secret, which volley k8s does not write"),
        (f.key.is_some(), "--key", "a client key belongs in a Kubernetes Secret, which volley k8s does not write"),
        (f.shard.is_some(), "--shard", "volley k8s gives each pod its shard"),
        (f.start_at.is_some(), "--start-at", "volley k8s sets it from --lead"),
    ]
    .into_iter()
    .find(|(on, _, _)| *on)
    .map(|(_, flag, why)| (flag, why))
}

/// The start: now + lead, rounded up to a whole second.
fn start_at(now: SystemTime, lead: Duration) -> SystemTime {
    let t = (now + lead).duration_since(UNIX_EPOCH).unwrap_or_default();
    UNIX_EPOCH + Duration::from_secs(t.as_secs() + u64::from(t.subsec_nanos() > 0))
}

/// The Job's plan and YAML for these flags at `now`, or the message of a bad flag.
pub(crate) fn manifest_for(
    args: &K8sArgs,
    flags: &RunFlags,
    argv: &[String],
    now: SystemTime,
) -> Result<(JobPlan, String), String> {
    let shards = args.shards.ok_or("--shards N is required")?;
    if let Some((flag, why)) = refused(flags) {
        return Err(format!("{flag}: {why}"));
    }
    let e = |m: ManifestError| m.to_string();
    let cpus = manifest::cpu_quantity(&args.cpu).map_err(e)?;
    manifest::memory_quantity(&args.memory).map_err(e)?;
    let image = args
        .image
        .clone()
        .unwrap_or_else(|| format!("volley:{}", env!("CARGO_PKG_VERSION")));
    manifest::image(&image).map_err(e)?;
    manifest::dns_label("--namespace", &args.namespace, 63).map_err(e)?;
    let name = args.name.clone().unwrap_or_else(|| default_name(now));
    manifest::dns_label("--name", &name, MAX_NAME).map_err(e)?;
    let node_selector = args
        .node_selector
        .iter()
        .map(|v| manifest::node_selector(v))
        .collect::<Result<BTreeMap<_, _>, _>>()
        .map_err(e)?;
    let start = start_at(now, args.lead);
    let start_text = humantime::format_rfc3339_seconds(start).to_string();
    // The load as shard 0 would run it: every flag and every share checked here, not in a pod.
    let threads = flags.threads.unwrap_or(cpus);
    let mut flags = flags.clone();
    flags.shard = Some(format!("0/{shards}"));
    flags.start_at = Some(start_text.clone());
    flags.clock_budget = Some("off".into());
    let cfg = RunConfig::from_flags(&flags, threads as usize).map_err(|e| e.to_string())?;
    let shipped = ship_files(&flags, &cfg).map_err(e)?;
    let run = PodRun {
        shards,
        start_at: start_text.clone(),
        threads: flags.threads.is_none().then_some(cpus),
        rewrites: shipped.rewrites,
    };
    let plan = JobPlan {
        name,
        namespace: args.namespace.clone(),
        image,
        shards,
        args: pod_args::pod_args(argv, &run),
        start_at: start_text,
        cpu: args.cpu.clone(),
        memory: args.memory.clone(),
        deadline_s: deadline_s(&cfg, args.lead),
        node_selector,
        command: shown_command(argv),
        files: shipped.items,
        thresholds: flags.threshold.clone(),
        allow_shortfall: flags.allow_shortfall,
    };
    let yaml = manifest::documents(&plan);
    Ok((plan, yaml))
}

/// The files the load names, read for the ConfigMap: `--cacert`, `--body-file`, and
/// `--requests-file` with the files it reads.
fn ship_files(flags: &RunFlags, cfg: &RunConfig) -> Result<files::Shipped, ManifestError> {
    let reads: &[std::path::PathBuf] = cfg.load.workload.as_ref().map_or(&[], |w| &w.files);
    let mut named = Vec::new();
    if let Some(p) = &flags.cacert {
        named.push(files::Named {
            flag: "--cacert",
            path: p,
            reads: &[],
        });
    }
    if let Some(p) = &flags.body_file {
        named.push(files::Named {
            flag: "--body-file",
            path: p,
            reads: &[],
        });
    }
    if let Some(p) = &flags.requests_file {
        named.push(files::Named {
            flag: "--requests-file",
            path: p,
            reads,
        });
    }
    files::ship(&named)
}

/// The Job's deadline when the load has a duration: the lead, the latest start, warm-up,
/// duration and a timeout's drain, and a minute of margin for pulling and writing.
fn deadline_s(cfg: &RunConfig, lead: Duration) -> Option<i64> {
    let d = cfg.load.duration?;
    let total = lead + cfg.start.max_late + cfg.load.warmup + d + cfg.load.timeout;
    Some(total.as_secs() as i64 + 60)
}

/// The command line as the Job's annotation keeps it: secrets redacted, the program `volley`.
fn shown_command(argv: &[String]) -> String {
    let mut shown = crate::result::redact::argv(argv);
    if let Some(program) = shown.first_mut() {
        *program = "volley".into();
    }
    shown.join(" ")
}

fn default_name(now: SystemTime) -> String {
    let t = humantime::format_rfc3339_seconds(now).to_string();
    // 2026-11-25T18:00:00Z -> volley-20261125-180000
    let digits: String = t.chars().filter(|c| c.is_ascii_digit()).collect();
    format!("volley-{}-{}", &digits[..8], &digits[8..14])
}
