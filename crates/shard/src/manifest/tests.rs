use super::*;

fn plan() -> JobPlan {
    JobPlan {
        name: "volley-load".into(),
        namespace: "bench".into(),
        image: "registry.example/volley:0.1.0".into(),
        shards: 4,
        args: vec!["run".into(), "http://svc:8080/".into()],
        start_at: "2026-11-25T18:00:00Z".into(),
        cpu: "2".into(),
        memory: "256Mi".into(),
        deadline_s: Some(120),
        node_selector: BTreeMap::new(),
        command: "volley k8s http://svc:8080/ --shards 4".into(),
        files: vec![],
        thresholds: vec![],
        allow_shortfall: false,
    }
}

#[test]
fn the_job_is_indexed_one_attempt_per_shard_and_locked_down() {
    let j = job(&plan());
    let spec = j.spec.as_ref().unwrap();
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!((spec.completions, spec.parallelism), (Some(4), Some(4)));
    assert_eq!(spec.backoff_limit, Some(0));
    let pod = spec.template.spec.as_ref().unwrap();
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    assert_eq!(pod.automount_service_account_token, Some(false));
    let c = &pod.containers[0];
    let sc = c.security_context.as_ref().unwrap();
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(
        sc.capabilities.as_ref().unwrap().drop,
        Some(vec!["ALL".to_string()])
    );
    let psc = pod.security_context.as_ref().unwrap();
    assert_eq!(psc.run_as_non_root, Some(true));
    assert_eq!(
        psc.seccomp_profile.as_ref().unwrap().type_,
        "RuntimeDefault"
    );
    let yaml = to_yaml(&j);
    assert!(
        yaml.starts_with("apiVersion: batch/v1\nkind: Job\n"),
        "{yaml}"
    );
}

#[test]
fn hostile_values_stay_values() {
    let mut p = plan();
    let hostile = "x\"\n---\nkind: Secret\n  key: 'v' # {a: [b]}\t$(HOME) \u{0}";
    p.args = vec![
        "run".into(),
        "-H".into(),
        format!("X-A: {hostile}"),
        hostile.into(),
    ];
    p.command = hostile.into();
    p.image = "reg/volley:1".into();
    let j = job(&p);
    let yaml = to_yaml(&j);
    // One document, and the arguments read back exactly as given.
    assert!(!yaml.contains("\n---"), "{yaml}");
    let back: Job = serde_saphyr::from_str(&yaml).unwrap();
    assert_eq!(back, j);
    let args = back.spec.unwrap().template.spec.unwrap().containers[0]
        .args
        .clone();
    assert_eq!(args.unwrap(), p.args);
}

#[test]
fn bad_names_and_quantities_are_refused_with_the_flag() {
    assert!(dns_label("--name", "volley-1", MAX_NAME).is_ok());
    for bad in [
        "",
        "Volley",
        "-a",
        "a-",
        "a_b",
        "a.b",
        &"a".repeat(53),
        "a\nb",
    ] {
        let e = dns_label("--name", bad, MAX_NAME).unwrap_err();
        assert_eq!(e.flag, "--name", "{bad}");
    }
    assert_eq!(cpu_quantity("2").unwrap(), 2);
    assert_eq!(cpu_quantity("1.5").unwrap(), 2);
    assert_eq!(cpu_quantity("500m").unwrap(), 1);
    for bad in ["0", "0m", "m", "-1", "1e3", "two", "1.5m", ""] {
        assert!(cpu_quantity(bad).is_err(), "{bad}");
    }
    assert!(memory_quantity("256Mi").is_ok());
    assert!(memory_quantity("1000000").is_ok());
    for bad in ["", "Mi", "0Mi", "1.5Gi", "1 Gi", "12Xi"] {
        assert!(memory_quantity(bad).is_err(), "{bad}");
    }
    assert!(image("reg/v:1").is_ok());
    assert!(image("reg/v:1\nkind: x").is_err());
    assert_eq!(
        node_selector("pool=load").unwrap(),
        ("pool".to_string(), "load".to_string())
    );
    assert!(node_selector("pool").is_err());
    assert!(node_selector("a=b: c").is_err());
}
