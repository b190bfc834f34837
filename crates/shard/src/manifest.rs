//! The Indexed Job that runs N shards of one load, built from the Kubernetes API's own types
//! (k8s-openapi) and printed as YAML by a serializer: flag values are only ever string values
//! of typed fields, so none can add a key, a document or an argument.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Capabilities, ConfigMap, ConfigMapVolumeSource, Container, EnvVar, EnvVarSource,
    KeyToPath, ObjectFieldSelector, PodAffinityTerm, PodAntiAffinity, PodSecurityContext, PodSpec,
    PodTemplateSpec, ResourceRequirements, SeccompProfile, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::ByteString;

use super::files::{FileItem, MOUNT};
use super::pod_args::INDEX_VAR;

/// The numeric user and group the image runs as (`runAsNonRoot` needs a number to check).
pub(crate) const RUN_AS: i64 = 65532;
/// The annotation of an Indexed Job's pods that holds their index.
pub(crate) const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// The Job's annotations that `volley k8s collect` reads back.
pub(crate) const SHARDS_ANNOTATION: &str = "volley.dev/shards";
/// The shards' `--start-at`.
pub(crate) const START_ANNOTATION: &str = "volley.dev/start-at";
/// The `--threshold`s `collect` checks on the merged result (a JSON list of strings).
pub(crate) const THRESHOLDS_ANNOTATION: &str = "volley.dev/thresholds";
/// Whether the user gave `--allow-shortfall` (`true`/`false`).
pub(crate) const SHORTFALL_ANNOTATION: &str = "volley.dev/allow-shortfall";
/// The label every pod of one Job carries (the anti-affinity selects on it).
pub(crate) const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// The longest Job name: its pods are named `NAME-INDEX-XXXXX` and their hostnames
/// `NAME-INDEX`, which must stay within a 63-character DNS label.
pub const MAX_NAME: usize = 52;

/// Everything the Job is made of, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct JobPlan {
    /// The Job's name (a DNS label of at most [`MAX_NAME`] characters).
    pub name: String,
    /// Its namespace (a DNS label).
    pub namespace: String,
    /// The generator image.
    pub image: String,
    /// Shards, one pod each.
    pub shards: u32,
    /// The container's arguments (`pod_args`).
    pub args: Vec<String>,
    /// The shards' `--start-at`.
    pub start_at: String,
    /// CPU request and limit of each pod (a Kubernetes quantity: `2`, `500m`).
    pub cpu: String,
    /// Memory request and limit of each pod (`256Mi`).
    pub memory: String,
    /// Seconds after which Kubernetes ends the Job, when the load has a duration.
    pub deadline_s: Option<i64>,
    /// `--node-selector KEY=VALUE` pairs.
    pub node_selector: BTreeMap<String, String>,
    /// The redacted `volley k8s` command line, kept as an annotation.
    pub command: String,
    /// Files the load names, carried in a ConfigMap (`files`).
    pub files: Vec<FileItem>,
    /// `--threshold`s, for `collect` to check on the merged result.
    pub thresholds: Vec<String>,
    /// `--allow-shortfall`.
    pub allow_shortfall: bool,
}

/// A value `volley k8s` cannot put in a manifest.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{flag} {value:?}: {why}")]
pub struct ManifestError {
    /// The flag.
    pub flag: &'static str,
    /// Its value.
    pub value: String,
    /// What is wrong.
    pub why: String,
}

fn refuse(flag: &'static str, value: &str, why: impl Into<String>) -> ManifestError {
    ManifestError {
        flag,
        value: value.to_string(),
        why: why.into(),
    }
}

/// Checks a DNS label (RFC 1123: lower-case letters, digits and `-`, a letter or digit at
/// each end) of at most `max` characters.
pub fn dns_label(flag: &'static str, v: &str, max: usize) -> Result<(), ManifestError> {
    let ok_chars = v
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    let ends = !v.starts_with('-') && !v.ends_with('-');
    if v.is_empty() || v.len() > max || !ok_chars || !ends {
        return Err(refuse(
            flag,
            v,
            format!("must be 1 to {max} lower-case letters, digits and '-', starting and ending with a letter or digit"),
        ));
    }
    Ok(())
}

/// Checks a CPU quantity (`2`, `1.5`, `500m`) and returns the whole CPUs it rounds up to.
pub fn cpu_quantity(v: &str) -> Result<u64, ManifestError> {
    let bad = || {
        refuse(
            "--cpu",
            v,
            "must be CPUs (2, 1.5) or millicores (500m), more than 0",
        )
    };
    let cpus = match v.strip_suffix('m') {
        Some(m) if !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()) => {
            m.parse::<f64>().map_err(|_| bad())? / 1000.0
        }
        Some(_) => return Err(bad()),
        None if v.bytes().all(|b| b.is_ascii_digit() || b == b'.') && v.len() <= 12 => {
            v.parse::<f64>().map_err(|_| bad())?
        }
        None => return Err(bad()),
    };
    if cpus.is_nan() || cpus <= 0.0 || cpus > 10_000.0 {
        return Err(bad());
    }
    Ok(cpus.ceil() as u64)
}

/// Checks a memory quantity (`256Mi`, `1Gi`, `500M`, bytes).
pub fn memory_quantity(v: &str) -> Result<(), ManifestError> {
    let digits = v.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &v[digits.len()..];
    let units = ["", "Ki", "Mi", "Gi", "Ti", "k", "M", "G", "T"];
    let n: u64 = digits.parse().unwrap_or(0);
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || n == 0
        || !units.contains(&unit)
    {
        return Err(refuse(
            "--memory",
            v,
            "must be a size in bytes with an optional Ki, Mi, Gi, Ti, k, M, G or T (e.g. 256Mi)",
        ));
    }
    Ok(())
}

/// Checks an image reference: no spaces or control characters (the registry judges the rest).
pub fn image(v: &str) -> Result<(), ManifestError> {
    if v.is_empty() || v.len() > 4096 || v.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(refuse(
            "--image",
            v,
            "must be an image reference such as registry.example/volley:0.1.0",
        ));
    }
    Ok(())
}

/// Parses `--node-selector KEY=VALUE` (a label key and value, checked loosely: the API server
/// checks them again).
pub fn node_selector(v: &str) -> Result<(String, String), ManifestError> {
    let bad = || {
        refuse(
            "--node-selector",
            v,
            "must be KEY=VALUE, a node label (e.g. pool=load)",
        )
    };
    let (k, val) = v.split_once('=').ok_or_else(bad)?;
    let label = |s: &str, allow_slash: bool| {
        s.len() <= 316
            && s.bytes().all(|b| {
                b.is_ascii_alphanumeric() || b"-_.".contains(&b) || (allow_slash && b == b'/')
            })
    };
    if k.is_empty() || !label(k, true) || !label(val, false) || val.len() > 63 {
        return Err(bad());
    }
    Ok((k.to_string(), val.to_string()))
}

fn labels(plan: &JobPlan) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "volley".to_string()),
        (INSTANCE_LABEL.to_string(), plan.name.clone()),
    ])
}

/// The Job.
pub(crate) fn job(plan: &JobPlan) -> Job {
    let annotations = BTreeMap::from([
        (SHARDS_ANNOTATION.to_string(), plan.shards.to_string()),
        (START_ANNOTATION.to_string(), plan.start_at.clone()),
        ("volley.dev/command".to_string(), plan.command.clone()),
        (
            THRESHOLDS_ANNOTATION.to_string(),
            serde_json::to_string(&plan.thresholds).expect("strings serialize"),
        ),
        (
            SHORTFALL_ANNOTATION.to_string(),
            plan.allow_shortfall.to_string(),
        ),
    ]);
    Job {
        metadata: ObjectMeta {
            name: Some(plan.name.clone()),
            namespace: Some(plan.namespace.clone()),
            labels: Some(labels(plan)),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(plan.shards as i32),
            parallelism: Some(plan.shards as i32),
            // One attempt per shard: a second attempt would start late and be refused anyway.
            backoff_limit: Some(0),
            active_deadline_seconds: plan.deadline_s,
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(plan)),
                    ..Default::default()
                }),
                spec: Some(pod_spec(plan)),
            },
            ..Default::default()
        }),
        status: None,
    }
}

fn pod_spec(plan: &JobPlan) -> PodSpec {
    let mut selector = BTreeMap::from([
        ("kubernetes.io/os".to_string(), "linux".to_string()),
        // The image holds an x86-64 binary.
        ("kubernetes.io/arch".to_string(), "amd64".to_string()),
    ]);
    selector.extend(plan.node_selector.clone());
    PodSpec {
        restart_policy: Some("Never".into()),
        automount_service_account_token: Some(false),
        enable_service_links: Some(false),
        termination_grace_period_seconds: Some(10),
        node_selector: Some(selector),
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(RUN_AS),
            run_as_group: Some(RUN_AS),
            seccomp_profile: Some(runtime_default()),
            ..Default::default()
        }),
        affinity: Some(Affinity {
            // One generator per node: two on one node share its CPUs and NIC, which is what
            // sharding is meant to avoid. A shard that finds no free node stays Pending and
            // its late start is refused.
            pod_anti_affinity: Some(PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: Some(vec![PodAffinityTerm {
                    label_selector: Some(LabelSelector {
                        match_labels: Some(BTreeMap::from([(
                            INSTANCE_LABEL.to_string(),
                            plan.name.clone(),
                        )])),
                        ..Default::default()
                    }),
                    topology_key: "kubernetes.io/hostname".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }),
        containers: vec![container(plan)],
        volumes: (!plan.files.is_empty()).then(|| {
            vec![Volume {
                name: "files".into(),
                config_map: Some(ConfigMapVolumeSource {
                    name: config_map_name(plan),
                    items: Some(
                        plan.files
                            .iter()
                            .map(|f| KeyToPath {
                                key: f.key.clone(),
                                path: f.path.clone(),
                                ..Default::default()
                            })
                            .collect(),
                    ),
                    default_mode: Some(0o444),
                    ..Default::default()
                }),
                ..Default::default()
            }]
        }),
        ..Default::default()
    }
}

fn config_map_name(plan: &JobPlan) -> String {
    format!("{}-files", plan.name)
}

/// The ConfigMap of the load's files, when it names any.
pub(crate) fn config_map(plan: &JobPlan) -> Option<ConfigMap> {
    if plan.files.is_empty() {
        return None;
    }
    let data = plan
        .files
        .iter()
        .map(|f| (f.key.clone(), ByteString(f.bytes.clone())))
        .collect();
    Some(ConfigMap {
        metadata: ObjectMeta {
            name: Some(config_map_name(plan)),
            namespace: Some(plan.namespace.clone()),
            labels: Some(labels(plan)),
            ..Default::default()
        },
        binary_data: Some(data),
        immutable: Some(true),
        ..Default::default()
    })
}

fn runtime_default() -> SeccompProfile {
    SeccompProfile {
        type_: "RuntimeDefault".into(),
        ..Default::default()
    }
}

fn container(plan: &JobPlan) -> Container {
    let quantities = BTreeMap::from([
        ("cpu".to_string(), Quantity(plan.cpu.clone())),
        ("memory".to_string(), Quantity(plan.memory.clone())),
    ]);
    Container {
        name: "volley".into(),
        image: Some(plan.image.clone()),
        image_pull_policy: Some("IfNotPresent".into()),
        args: Some(plan.args.clone()),
        env: Some(vec![EnvVar {
            name: INDEX_VAR.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: format!("metadata.annotations['{INDEX_ANNOTATION}']"),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }]),
        // Requests equal to limits: the Guaranteed class, so a generator is not throttled
        // below what it asked for.
        resources: Some(ResourceRequirements {
            requests: Some(quantities.clone()),
            limits: Some(quantities),
            ..Default::default()
        }),
        security_context: Some(SecurityContext {
            run_as_non_root: Some(true),
            allow_privilege_escalation: Some(false),
            privileged: Some(false),
            read_only_root_filesystem: Some(true),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                ..Default::default()
            }),
            seccomp_profile: Some(runtime_default()),
            ..Default::default()
        }),
        volume_mounts: (!plan.files.is_empty()).then(|| {
            vec![VolumeMount {
                name: "files".into(),
                mount_path: MOUNT.into(),
                read_only: Some(true),
                ..Default::default()
            }]
        }),
        // A pod that fails tells why in its status, even when its log is gone.
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        ..Default::default()
    }
}

/// The Job as one YAML document.
pub(crate) fn to_yaml(job: &Job) -> String {
    serde_saphyr::to_string(job).expect("a Job always serializes")
}

/// Everything to apply: the ConfigMap of files (when there is one), then the Job, as YAML
/// documents separated by `---`.
pub fn documents(plan: &JobPlan) -> String {
    let job = to_yaml(&job(plan));
    match config_map(plan) {
        Some(cm) => {
            let cm = serde_saphyr::to_string(&cm).expect("a ConfigMap always serializes");
            format!("{cm}---\n{job}")
        }
        None => job,
    }
}

#[cfg(test)]
mod tests;
