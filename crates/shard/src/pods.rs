//! What `kubectl get pods -o json` says of the Job's pods: each one's index, phase and, when
//! it did not finish well, why, in the words Kubernetes uses (Evicted, OOMKilled, Unschedulable).

use k8s_openapi::api::core::v1::Pod;

use super::manifest::INDEX_ANNOTATION;

/// A pod's phase, as Kubernetes names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Not yet running (unscheduled, pulling its image).
    Pending,
    /// Its container runs.
    Running,
    /// It exited 0.
    Succeeded,
    /// It exited otherwise, or was evicted.
    Failed,
    /// Its node does not answer, or the phase is one volley does not know.
    Unknown,
}

impl Phase {
    fn parse(s: &str) -> Phase {
        match s {
            "Pending" => Phase::Pending,
            "Running" => Phase::Running,
            "Succeeded" => Phase::Succeeded,
            "Failed" => Phase::Failed,
            _ => Phase::Unknown,
        }
    }

    /// Still to end.
    pub(crate) fn unfinished(self) -> bool {
        matches!(self, Phase::Pending | Phase::Running)
    }
}

/// One pod of the Job.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PodState {
    /// Its name.
    pub name: String,
    /// Its completion index (None: not a pod of an Indexed Job).
    pub index: Option<u32>,
    /// Its phase.
    pub phase: Phase,
    /// The generator's exit code, once it ended.
    pub exit_code: Option<i32>,
    /// Why it is not a clean run, when Kubernetes says: the pod's reason and message, the
    /// container's termination reason and message, or its scheduling condition.
    pub why: Option<String>,
}

/// Reads a pod list (`kind: List` or `PodList`).
pub fn parse_list(json: &str) -> Result<Vec<PodState>, String> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("not a pod list: {e}"))?;
    let items = v
        .get("items")
        .and_then(|i| i.as_array())
        .ok_or("not a pod list: no items")?;
    items
        .iter()
        .map(|item| {
            let pod: Pod =
                serde_json::from_value(item.clone()).map_err(|e| format!("not a pod: {e}"))?;
            Ok(state(&pod))
        })
        .collect()
}

fn state(pod: &Pod) -> PodState {
    let meta = &pod.metadata;
    let index = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get(INDEX_ANNOTATION))
        .and_then(|i| i.parse().ok());
    let status = pod.status.clone().unwrap_or_default();
    let terminated = status
        .container_statuses
        .as_ref()
        .and_then(|cs| cs.iter().find(|c| c.name == "volley").or(cs.first()))
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.clone());
    let mut why = Vec::new();
    if let Some(r) = &status.reason {
        why.push(join(r, status.message.as_deref()));
    }
    if let Some(t) = &terminated {
        if t.exit_code != 0 {
            let reason = t.reason.as_deref().unwrap_or("Error");
            why.push(format!(
                "{} (exit {})",
                join(reason, t.message.as_deref().map(last_line)),
                t.exit_code
            ));
        }
    }
    let unscheduled = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False");
    if let Some(c) = unscheduled {
        why.push(join(
            c.reason.as_deref().unwrap_or("not scheduled"),
            c.message.as_deref(),
        ));
    }
    PodState {
        name: meta.name.clone().unwrap_or_default(),
        index,
        phase: Phase::parse(status.phase.as_deref().unwrap_or("Unknown")),
        exit_code: terminated.map(|t| t.exit_code),
        why: (!why.is_empty()).then(|| why.join("; ")),
    }
}

fn join(reason: &str, message: Option<&str>) -> String {
    match message.map(str::trim).filter(|m| !m.is_empty()) {
        Some(m) => format!("{reason}: {m}"),
        None => reason.to_string(),
    }
}

/// The last non-empty line of a termination message (the log's last line when the container
/// failed: `FallbackToLogsOnError`).
fn last_line(m: &str) -> &str {
    m.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_evicted_a_failed_and_an_unscheduled_pod_say_why() {
        let json = r#"{"apiVersion":"v1","kind":"List","items":[
          {"apiVersion":"v1","kind":"Pod","metadata":{"name":"j-0-a","annotations":{"batch.kubernetes.io/job-completion-index":"0"}},
           "status":{"phase":"Succeeded","containerStatuses":[{"name":"volley","image":"i","imageID":"","ready":false,"restartCount":0,
             "state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]}},
          {"apiVersion":"v1","kind":"Pod","metadata":{"name":"j-1-b","annotations":{"batch.kubernetes.io/job-completion-index":"1"}},
           "status":{"phase":"Failed","reason":"Evicted","message":"The node was low on resource: memory."}},
          {"apiVersion":"v1","kind":"Pod","metadata":{"name":"j-2-c","annotations":{"batch.kubernetes.io/job-completion-index":"2"}},
           "status":{"phase":"Failed","containerStatuses":[{"name":"volley","image":"i","imageID":"","ready":false,"restartCount":0,
             "state":{"terminated":{"exitCode":3,"reason":"Error","message":"summary\nvolley: late shard: started 2.1 s after --start-at\n"}}}]}},
          {"apiVersion":"v1","kind":"Pod","metadata":{"name":"j-3-d","annotations":{"batch.kubernetes.io/job-completion-index":"3"}},
           "status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable",
             "message":"0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."}]}}
        ]}"#;
        let pods = parse_list(json).unwrap();
        assert_eq!(pods.len(), 4);
        assert_eq!(pods[0].index, Some(0));
        assert_eq!(pods[0].why, None);
        assert_eq!(pods[0].exit_code, Some(0));
        assert_eq!(
            pods[1].why.as_deref(),
            Some("Evicted: The node was low on resource: memory.")
        );
        assert_eq!(
            pods[2].why.as_deref(),
            Some("Error: volley: late shard: started 2.1 s after --start-at (exit 3)")
        );
        assert_eq!(pods[3].phase, Phase::Pending);
        assert_eq!(pods[0].phase, Phase::Succeeded);
        assert!(pods[3]
            .why
            .as_deref()
            .unwrap()
            .starts_with("Unschedulable: 0/3 nodes"));
    }

    #[test]
    fn what_is_not_a_pod_list_is_said() {
        assert!(parse_list("[]").unwrap_err().contains("no items"));
        assert!(parse_list("error: x")
            .unwrap_err()
            .contains("not a pod list"));
    }
}
