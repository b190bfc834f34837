//! The arguments of the generator container: the user's own `volley k8s` tokens, less the
//! flags that belong to `volley k8s`, as a `volley run` that takes shard
//! `$(VOLLEY_SHARD_INDEX)/N` and prints its RunResult between markers. Each token stays one
//! list element of the typed container spec: nothing is re-parsed, so no value can split or
//! add an argument.

/// The environment variable the pod takes its index from (the Job's completion index).
pub(crate) const INDEX_VAR: &str = "VOLLEY_SHARD_INDEX";

/// Flags judged on the merged result by `volley k8s collect`, not by each shard alone (a
/// shard's p99 is not the load's; a shard exiting 1 would fail the Job and stop the others).
pub(crate) const JUDGED_AT_COLLECT: [&str; 1] = ["--threshold"];

/// `volley k8s` flags that take a value (not passed on to the pods).
pub(crate) const OWN_FLAGS: [&str; 8] = [
    "--shards",
    "--image",
    "--namespace",
    "--name",
    "--lead",
    "--cpu",
    "--memory",
    "--node-selector",
];

/// What the pods run, besides the user's flags.
#[derive(Debug, Clone, PartialEq)]
pub struct PodRun {
    /// Shards in all.
    pub shards: u32,
    /// `--start-at`, RFC 3339.
    pub start_at: String,
    /// `-t`, when the user gave none: the CPUs the pod may use (the affinity mask of a pod is
    /// the node's, not its CPU limit).
    pub threads: Option<u64>,
    /// File flags whose value becomes the mounted copy's path (`files`).
    pub rewrites: Vec<super::files::Rewrite>,
}

/// Kubernetes expands `$(NAME)` in a container's arguments and reads `$$` as `$`: every `$`
/// of the user's text is doubled so it reaches volley as typed.
pub(crate) fn escape(token: &str) -> String {
    token.replace('$', "$$")
}

/// The container's arguments for `argv` (`volley k8s URL [flags]`, the program name first).
pub fn pod_args(argv: &[String], run: &PodRun) -> Vec<String> {
    let mut out = vec!["run".to_string()];
    let mut it = argv.iter().skip(2);
    while let Some(a) = it.next() {
        let name = a.split('=').next().unwrap_or(a);
        if OWN_FLAGS.contains(&name) || JUDGED_AT_COLLECT.contains(&name) {
            if !a.contains('=') {
                it.next();
            }
            continue;
        }
        if let Some(r) = run.rewrites.iter().find(|r| r.flag == name) {
            if a.contains('=') {
                out.push(format!("{}={}", r.flag, r.in_pod));
            } else {
                it.next();
                out.extend([r.flag.to_string(), r.in_pod.clone()]);
            }
            continue;
        }
        out.push(escape(a));
    }
    if let Some(t) = run.threads {
        out.extend(["-t".to_string(), t.to_string()]);
    }
    // A shard's shortfall is the merged result's to judge; the pod's exit stays 0.
    if !out.iter().any(|a| a == "--allow-shortfall") {
        out.push("--allow-shortfall".into());
    }
    out.extend(
        [
            "--shard",
            &format!("$({INDEX_VAR})/{}", run.shards),
            "--start-at",
            &run.start_at,
            "-q",
            "--json",
            "-",
            "--json-markers",
        ]
        .map(String::from),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn own_flags_go_and_every_other_token_stays_as_one_argument() {
        let run = PodRun {
            shards: 4,
            start_at: "2026-11-25T18:00:00Z".into(),
            threads: Some(2),
            rewrites: vec![],
        };
        let a = pod_args(
            &argv(&[
                "volley",
                "k8s",
                "http://svc:8080/",
                "--shards",
                "4",
                "-R",
                "10000",
                "--image=reg/volley:1",
                "-H",
                "X-A: 1\nkind: Secret",
                "--namespace",
                "load",
            ]),
            &run,
        );
        assert_eq!(
            a,
            argv(&[
                "run",
                "http://svc:8080/",
                "-R",
                "10000",
                "-H",
                "X-A: 1\nkind: Secret",
                "-t",
                "2",
                "--allow-shortfall",
                "--shard",
                "$(VOLLEY_SHARD_INDEX)/4",
                "--start-at",
                "2026-11-25T18:00:00Z",
                "-q",
                "--json",
                "-",
                "--json-markers",
            ])
        );
    }

    #[test]
    fn a_dollar_of_the_user_is_never_expanded() {
        assert_eq!(escape("$(VOLLEY_SHARD_INDEX)"), "$$(VOLLEY_SHARD_INDEX)");
        assert_eq!(escape("a$$b"), "a$$$$b");
        let run = PodRun {
            shards: 2,
            start_at: "t".into(),
            threads: None,
            rewrites: vec![super::super::files::Rewrite {
                flag: "--cacert",
                in_pod: "/etc/volley/files/f0/ca.pem".into(),
            }],
        };
        let a = pod_args(
            &argv(&[
                "volley",
                "k8s",
                "http://h/?q=$(X)",
                "--cacert",
                "/home/me/ca.pem",
            ]),
            &run,
        );
        assert_eq!(a[1], "http://h/?q=$$(X)");
        assert_eq!(a[2..4], ["--cacert", "/etc/volley/files/f0/ca.pem"]);
        let b = pod_args(
            &argv(&["volley", "k8s", "https://h/", "--cacert=ca.pem"]),
            &run,
        );
        assert_eq!(b[2], "--cacert=/etc/volley/files/f0/ca.pem");
        assert!(!a.contains(&"-t".to_string()));
    }
}
