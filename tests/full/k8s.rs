//! `volley k8s`: the Indexed Job it prints (checked field by field, validated strictly against
//! the Kubernetes schemas of two versions with `kubernetes-validate`, hostile flag values
//! included), the flags it refuses, and `volley k8s collect` against recorded pod logs replayed
//! by a fake `kubectl` (tests/fixtures/k8s: a complete Job, an evicted and a late pod, a pod
//! that never ran, a Job still running, one that does not exist).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::{limited, output_text, volley};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/k8s")
}

/// `volley k8s ARGS`: its output, and the Job it printed as JSON (read by a YAML 1.2 reader).
fn k8s(args: &[&str]) -> (Output, String) {
    let mut all = vec!["k8s"];
    all.extend_from_slice(args);
    let o = volley(&all, Duration::from_secs(20));
    (o.clone(), String::from_utf8_lossy(&o.stdout).into_owned())
}

fn job_of(yaml: &str) -> Value {
    serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("not YAML: {e}\n{yaml}"))
}

fn container(job: &Value) -> &Value {
    &job["spec"]["template"]["spec"]["containers"][0]
}

fn args_of(job: &Value) -> Vec<String> {
    container(job)["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

const HOSTILE_HEADER: &str = "X-Quote: \"it's\" # {a: [b]} --- &x *x !!str key: 'v' \\ $(HOME)";

#[test]
fn the_job_runs_one_shard_per_pod_started_together_and_locked_down() {
    let (o, yaml) = k8s(&[
        "http://svc.bench:8080/api?q=1",
        "-R",
        "20000",
        "-c",
        "64",
        "-d",
        "30s",
        "--shards",
        "4",
        "--image",
        "reg.example/volley:0.1.0",
        "--namespace",
        "bench",
        "--name",
        "load-test",
        "--lead",
        "90s",
        "--cpu",
        "1500m",
        "--memory",
        "512Mi",
        "--node-selector",
        "pool=load",
        "-H",
        HOSTILE_HEADER,
        "-H",
        "Authorization: Bearer sekrit",
        "--body",
        "yes",
        "--threshold",
        "p99<10ms",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let job = job_of(&yaml);
    assert_eq!(job["apiVersion"], "batch/v1");
    assert_eq!(job["kind"], "Job");
    assert_eq!(job["metadata"]["name"], "load-test");
    assert_eq!(job["metadata"]["namespace"], "bench");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], 4);
    assert_eq!(spec["parallelism"], 4);
    assert_eq!(spec["backoffLimit"], 0);
    // 90 s lead + 100 ms late + 30 s + 2 s timeout + 60 s margin.
    assert_eq!(spec["activeDeadlineSeconds"], 182);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(pod["automountServiceAccountToken"], false);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    assert_eq!(pod["nodeSelector"]["pool"], "load");
    let anti =
        &pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(anti["topologyKey"], "kubernetes.io/hostname");
    assert_eq!(
        anti["labelSelector"]["matchLabels"]["app.kubernetes.io/instance"],
        "load-test"
    );
    let c = container(&job);
    let sc = &c["securityContext"];
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["capabilities"]["drop"][0], "ALL");
    assert_eq!(c["resources"]["limits"]["cpu"], "1500m");
    assert_eq!(c["resources"]["requests"]["memory"], "512Mi");
    assert_eq!(
        c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    let start = job["metadata"]["annotations"]["volley.dev/start-at"]
        .as_str()
        .unwrap();
    // Every user token is one argument, as typed; volley's own come last.
    let args = args_of(&job);
    let want: Vec<String> = [
        "run",
        "http://svc.bench:8080/api?q=1",
        "-R",
        "20000",
        "-c",
        "64",
        "-d",
        "30s",
        "-H",
        // Kubernetes reads `$$` as `$`: the pod gets the header as typed.
        "X-Quote: \"it's\" # {a: [b]} --- &x *x !!str key: 'v' \\ $$(HOME)",
        "-H",
        "Authorization: Bearer sekrit",
        "--body",
        "yes",
        "-t",
        "2",
        "--allow-shortfall",
        "--shard",
        "$(VOLLEY_SHARD_INDEX)/4",
        "--start-at",
        start,
        "-q",
        "--json",
        "-",
        "--json-markers",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(args, want);
    // Thresholds are the whole load's: collect checks them on the merged result.
    let notes = &job["metadata"]["annotations"];
    assert_eq!(notes["volley.dev/thresholds"], "[\"p99<10ms\"]");
    assert_eq!(notes["volley.dev/allow-shortfall"], "false");
    // The annotation that records the command hides the secret.
    let command = job["metadata"]["annotations"]["volley.dev/command"]
        .as_str()
        .unwrap();
    assert!(command.starts_with("volley k8s "), "{command}");
    assert!(!command.contains("sekrit"), "{command}");
}

/// Flag sets whose manifests must validate: the load modes, the defaults, and values made to
/// break a YAML writer (quotes, `: `, `#`, `---`, flow syntax, YAML 1.1 bools and dates).
fn combinations() -> Vec<Vec<&'static str>> {
    vec![
        vec!["http://svc:8080/", "--shards", "2"],
        vec![
            "http://svc:8080/",
            "-R",
            "1000",
            "-d",
            "10s",
            "--shards",
            "3",
            "--cpu",
            "500m",
        ],
        vec![
            "http://svc:8080/",
            "-n",
            "100000",
            "-c",
            "16",
            "--shards",
            "8",
        ],
        vec![
            "http://svc:8080/",
            "--users",
            "100",
            "--spawn-rate",
            "10",
            "-d",
            "1m",
            "--shards",
            "4",
        ],
        vec![
            "https://svc.bench.svc.cluster.local/a?b=c&d={e}",
            "-R",
            "5000",
            "-d",
            "30s",
            "--shards",
            "4",
            "-k",
            "-H",
            HOSTILE_HEADER,
            "-H",
            "X-Date: 2026-11-25T18:00:00Z",
            "--body",
            "on",
            "--node-selector",
            "pool=load",
            "--node-selector",
            "example.com/tier=yes",
        ],
        vec![
            "http://svc:8080/",
            "--shards",
            "2",
            "--body",
            "line one\n---\nkind: Secret\n  data: {}\n",
            "--name",
            "a234567890123456789012345678901234567890123456789012",
        ],
    ]
}

/// `kubernetes-validate` (PyPI; scripts/install-test-deps.sh installs it): required in CI.
fn validator() -> Option<&'static str> {
    let ok = Command::new("kubernetes-validate")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok && std::env::var_os("CI").is_some() {
        panic!("kubernetes-validate is missing (scripts/install-test-deps.sh installs it)");
    }
    ok.then_some("kubernetes-validate")
}

#[test]
fn manifests_validate_strictly_against_two_kubernetes_versions() {
    let Some(tool) = validator() else {
        common::skip("kubernetes-validate is not installed (scripts/install-test-deps.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (i, combo) in combinations().iter().enumerate() {
        let (o, yaml) = k8s(combo);
        assert_eq!(o.status.code(), Some(0), "{combo:?}: {}", output_text(&o));
        // A YAML reader gets the URL and every value made to break YAML back exactly (a `$`
        // doubled, as Kubernetes reads `$$`).
        let args = args_of(&job_of(&yaml));
        let tricky = |t: &&&str| t.starts_with("http") || t.contains([' ', '\n']) || **t == "on";
        for token in combo.iter().filter(tricky) {
            assert!(
                args.contains(&token.replace('$', "$$")),
                "{token:?} not in {args:?}"
            );
        }
        let file = dir.path().join(format!("job-{i}.yaml"));
        std::fs::write(&file, &yaml).unwrap();
        for version in ["1.33.0", "1.37.0"] {
            let v = Command::new(tool)
                .args(["--strict", "-k", version])
                .arg(&file)
                .output()
                .unwrap();
            assert!(
                v.status.success(),
                "{combo:?} against {version}:\n{}{}\n{yaml}",
                String::from_utf8_lossy(&v.stdout),
                String::from_utf8_lossy(&v.stderr)
            );
        }
    }
}

#[test]
fn what_cannot_run_in_a_pod_is_refused_with_its_flag() {
    let cases: &[(&[&str], &str)] = &[
        (&["http://s/", "--shards", "2", "--pid", "1"], "--pid"),
        (
            &["http://s/", "--shards", "2", "--requests-file", "r.toml"],
            "--requests-file",
        ),
        (
            &["http://s/", "--shards", "2", "--cacert", "ca.pem"],
            "--cacert",
        ),
        (&["http://s/", "--shards", "2", "--shard", "0/2"], "--shard"),
        (
            &[
                "http://s/",
                "--shards",
                "2",
                "--start-at",
                "2026-11-25T18:00:00Z",
            ],
            "--start-at",
        ),
        (
            &["http://s/", "--shards", "2", "--name", "Bad_Name"],
            "--name",
        ),
        (
            &["http://s/", "--shards", "2", "--namespace", "a\nb"],
            "--namespace",
        ),
        (&["http://s/", "--shards", "2", "--cpu", "0"], "--cpu"),
        (
            &["http://s/", "--shards", "2", "--memory", "lots"],
            "--memory",
        ),
        (&["http://s/", "--shards", "2", "--image", "a b"], "--image"),
        (
            &["http://s/", "--shards", "2", "--node-selector", "nolabel"],
            "--node-selector",
        ),
        // Every shard needs a connection of its own.
        (
            &["http://s/", "--shards", "4", "-c", "2"],
            "-c/--connections",
        ),
        (&["http://s/", "--shards", "0"], "--shards"),
        (&["http://s/", "--shards", "2", "-R", "-5"], "-R"),
    ];
    for (args, flag) in cases {
        let (o, yaml) = k8s(args);
        let text = output_text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {text}");
        assert!(yaml.is_empty(), "{args:?} printed a manifest");
        assert!(
            text.contains(flag),
            "{args:?}: the error names {flag}: {text}"
        );
    }
}

#[test]
fn the_files_a_load_names_travel_in_a_config_map_the_pods_mount() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("data")).unwrap();
    std::fs::write(d.join("data/users.csv"), "id\n1\n2\n").unwrap();
    std::fs::write(
        d.join("mix.toml"),
        "[data]\nfile = \"data/users.csv\"\n[[request]]\npath = \"/u/{row.id}\"\n",
    )
    .unwrap();
    std::fs::write(d.join("body.bin"), [0u8, 255, 10, 13]).unwrap();
    let mix = d.join("mix.toml").display().to_string();
    let body = d.join("body.bin").display().to_string();
    let (o, yaml) = k8s(&[
        "http://svc/",
        "--shards",
        "2",
        "--requests-file",
        &mix,
        "--name",
        "files",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let docs: Vec<&str> = yaml.split("\n---\n").collect();
    assert_eq!(docs.len(), 2, "a ConfigMap, then the Job:\n{yaml}");
    let cm = job_of(docs[0]);
    assert_eq!(cm["kind"], "ConfigMap");
    assert_eq!(cm["metadata"]["name"], "files-files");
    let job = job_of(docs[1]);
    let args = args_of(&job);
    let at = |flag: &str| args[args.iter().position(|a| a == flag).unwrap() + 1].clone();
    assert_eq!(at("--requests-file"), "/etc/volley/files/f0/mix.toml");
    let volume = &job["spec"]["template"]["spec"]["volumes"][0]["configMap"];
    let items: Vec<(String, String)> = volume["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["key"].as_str().unwrap().into(),
                i["path"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        items,
        [("f0", "f0/mix.toml"), ("f1", "f0/data/users.csv")]
            .map(|(k, p)| (k.to_string(), p.to_string()))
    );
    let users = cm["binaryData"]["f1"]
        .as_str()
        .unwrap()
        .replace(['\n', ' '], "");
    assert_eq!(users, "aWQKMQoyCg=="); // base64 of "id\n1\n2\n"
    let mount = &container(&job)["volumeMounts"][0];
    assert_eq!(mount["mountPath"], "/etc/volley/files");
    assert_eq!(mount["readOnly"], true);
    // A body file, given as --body-file=PATH.
    let (o, yaml2) = k8s(&[
        "http://svc/",
        "--shards",
        "2",
        "-m",
        "POST",
        &format!("--body-file={body}"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let job2 = job_of(yaml2.split("\n---\n").nth(1).unwrap());
    assert!(args_of(&job2).contains(&"--body-file=/etc/volley/files/f0/body.bin".to_string()));
    let cm2 = job_of(yaml2.split("\n---\n").next().unwrap());
    assert_eq!(cm2["binaryData"]["f0"].as_str().unwrap().trim(), "AP8KDQ==");
    if let Some(tool) = validator() {
        let file = d.join("files.yaml");
        std::fs::write(&file, &yaml).unwrap();
        let v = Command::new(tool)
            .args(["--strict", "-k", "1.33.0"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
    }
}

/// `volley k8s collect ARGS` in `dir` with the fake kubectl first on PATH; the calls it got.
fn collect(dir: &Path, args: &[&str]) -> (Output, String) {
    let calls = dir.join("calls.txt");
    let mut all = vec!["k8s", "collect"];
    all.extend_from_slice(args);
    let path = format!(
        "{}:{}",
        fixtures().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_volley"));
    cmd.args(&all)
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("KUBECTL")
        .env("KUBECTL_CALLS", &calls);
    let o = limited(&mut cmd, &all, Duration::from_secs(30));
    (o, std::fs::read_to_string(&calls).unwrap_or_default())
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn a_complete_job_is_merged_with_every_shard_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (o, calls) = collect(
        dir.path(),
        &["done", "--namespace", "bench", "--html", "r.html"],
    );
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        calls.contains("get job done --output json --namespace bench"),
        "{calls}"
    );
    assert!(calls.contains("--selector job-name=done"), "{calls}");
    let merged = read_json(&dir.path().join("done.json"));
    let mut sum = 0;
    for i in 0..3 {
        let shard = read_json(&dir.path().join(format!("done.shards/shard-{i}.json")));
        assert_eq!(shard["shard"]["index"], i);
        sum += shard["requests"]["completed"].as_u64().unwrap();
    }
    assert_eq!(merged["requests"]["completed"].as_u64(), Some(sum));
    assert_eq!(merged["shards"].as_array().unwrap().len(), 3);
    assert!(sum > 0);
    assert!(text.contains("3 generators merged"), "{text}");
    assert!(dir.path().join("r.html").exists());
}

#[test]
fn thresholds_are_judged_on_the_merged_load() {
    let dir = tempfile::tempdir().unwrap();
    let (o, _) = collect(dir.path(), &["judged"]);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(1), "p99<1us cannot hold: {text}");
    let merged = read_json(&dir.path().join("judged.json"));
    let t = merged["thresholds"].as_array().unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(
        (t[0]["threshold"].as_str(), t[0]["pass"].as_bool()),
        (Some("errors<1%"), Some(true))
    );
    assert_eq!(
        (t[1]["threshold"].as_str(), t[1]["pass"].as_bool()),
        (Some("p99<1us"), Some(false))
    );
}

#[test]
fn an_evicted_and_a_late_pod_make_the_run_incomplete_never_partial() {
    let dir = tempfile::tempdir().unwrap();
    let (o, _) = collect(dir.path(), &["broken", "-o", "out.json"]);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(
        text.contains("shard 1 (pod broken-1-x1k2q): interrupted after"),
        "{text}"
    );
    assert!(
        text.contains("Evicted: The node was low on resource: memory"),
        "{text}"
    );
    assert!(
        text.contains("shard 2 (pod broken-2-x2k2q): Error: volley: late shard"),
        "{text}"
    );
    assert!(text.contains("incomplete: 1 of 3 shards"), "{text}");
    assert!(!dir.path().join("out.json").exists(), "nothing merged");
    // What was measured is kept: the whole shard, and the evicted one's part, marked.
    assert!(dir.path().join("out.shards/shard-0.json").exists());
    let part = read_json(&dir.path().join("out.shards/shard-1.incomplete.json"));
    assert_eq!(part["interrupted"], true);
}

#[test]
fn a_shard_without_a_pod_an_unfinished_job_and_no_job_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let (o, _) = collect(dir.path(), &["orphan"]);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(text.contains("shard 2: no pod ran it"), "{text}");
    let (o, _) = collect(dir.path(), &["running"]);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(
        text.contains("job running has not finished: 2 pod(s) running"),
        "{text}"
    );
    let (o, _) = collect(dir.path(), &["nope"]);
    let text = output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("jobs.batch \"nope\" not found"), "{text}");
    let (o, _) = collect(dir.path(), &["Bad_Job"]);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
}

#[test]
fn a_run_prints_its_result_between_markers_for_a_shared_log() {
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", server.addr);
    let o = volley(
        &[
            "run",
            &url,
            "-n",
            "20",
            "-c",
            "2",
            "-q",
            "--json",
            "-",
            "--json-markers",
        ],
        Duration::from_secs(20),
    );
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    // stdout and stderr joined, as kubectl logs joins them.
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    let found = volley::shard::markers::extract(&log);
    let json: Value = serde_json::from_str(&found.json.expect("a framed result")).unwrap();
    assert_eq!(json["requests"]["completed"], 20);
    let o = volley(
        &["run", &url, "-n", "5", "--json-markers"],
        Duration::from_secs(20),
    );
    assert_eq!(o.status.code(), Some(2), "--json-markers needs --json");
}
