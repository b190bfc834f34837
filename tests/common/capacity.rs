//! `volley capacity` in tests: one search with short steps ([`capacity`]), searched again while
//! the machine disturbed it ([`undisturbed`]), its JSON checked against
//! `schema/capacity.schema.json` strictly ([`capacity_schema_errors`]), and a server whose
//! capacity is known ([`KnownCapacity`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{spawn, volley, TestServer, OK};

/// What one `volley capacity` left: its exit code, stderr (the step lines and the answer), the
/// JSON printed with `--json -` (null when none was) and its results folder.
pub struct Searched {
    pub code: Option<i32>,
    pub stderr: String,
    pub json: Value,
    pub out: PathBuf,
}

impl Searched {
    /// Its steps, in the order run (none when no JSON was printed).
    pub fn steps(&self) -> &[Value] {
        self.json["steps"].as_array().map_or(&[], Vec::as_slice)
    }

    /// The steps of the search itself: those before its answer was first confirmed.
    pub fn search_steps(&self) -> &[Value] {
        let steps = self.steps();
        let n = steps
            .iter()
            .position(|s| s["phase"] == "confirm")
            .unwrap_or(steps.len());
        &steps[..n]
    }

    /// The confirmation runs (`phase: confirm`), in the order run.
    pub fn confirm_steps(&self) -> Vec<&Value> {
        self.steps()
            .iter()
            .filter(|s| s["phase"] == "confirm")
            .collect()
    }

    /// The search's runs of every rate (before the confirmation), in the order run.
    pub fn runs_by_rate(&self) -> BTreeMap<u64, Vec<&str>> {
        let mut m: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
        for s in self.search_steps() {
            m.entry(rate(s)).or_default().push(verdict(s));
        }
        m
    }
}

/// A step's target rate, req/s.
pub fn rate(step: &Value) -> u64 {
    step["target_rps"].as_f64().unwrap() as u64
}

/// A step's verdict.
pub fn verdict(step: &Value) -> &str {
    step["verdict"].as_str().unwrap()
}

/// `volley capacity URL ARGS --out OUT --json - --markdown OUT/asked.md` with 1 s steps after
/// a 0.5 s warm-up.
pub fn capacity(url: &str, out: &Path, args: &[&str]) -> Searched {
    let out_s = out.display().to_string();
    let markdown = out.join("asked.md").display().to_string();
    let mut all = vec![
        "capacity",
        url,
        "--step-duration",
        "1s",
        "--warmup",
        "500ms",
    ];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--out", &out_s, "--json", "-", "--markdown", &markdown]);
    // Some 25 steps of 1.5 s at most, and a step that other processes starved waits for an
    // idle machine (at most MACHINE_MAX_WAIT) before it runs again: room for six of those.
    let starved = volley::capacity::idle::MACHINE_MAX_WAIT + Duration::from_millis(1500);
    let o = volley(&all, Duration::from_secs(120) + starved * 6);
    Searched {
        code: o.status.code(),
        stderr: String::from_utf8_lossy(&o.stderr).to_string(),
        json: serde_json::from_slice(&o.stdout).unwrap_or(Value::Null),
        out: out.to_path_buf(),
    }
}

/// Runs `search` (given the attempt's number, from 1; it returns the search and the server it
/// ran against) up to three times while the machine disturbed it: a step the client limited,
/// a search that found the machine too busy (volley starved by other work, three times at one
/// rate: it gives no answer, which says nothing about the server), or what `disturbed` finds.
/// The last attempt is returned whatever it shows, for the caller's assertions: a search that
/// gives a number must give the right one.
pub fn undisturbed<T>(
    mut search: impl FnMut(u32) -> (Searched, T),
    disturbed: impl Fn(&Searched, &T) -> Option<String>,
) -> (Searched, T) {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let (s, server) = search(attempt);
        let why = if s.steps().iter().any(|s| verdict(s) == "client") {
            Some("the client was the limit".to_string())
        } else if s.json["limited_by"] == "machine" {
            Some("the machine was too busy to measure".to_string())
        } else {
            disturbed(&s, &server)
        };
        match why {
            Some(why) if attempt < 3 => {
                eprintln!("attempt {attempt}: {why}; searching again:\n{}", s.stderr);
            }
            _ => return (s, server),
        }
    }
}

/// The checks every search's output must pass: the JSON printed is `capacity.json`, matches
/// the schema (which names each of its keys), and every step is a RunResult on disk.
pub fn check_files(s: &Searched) {
    assert_eq!(s.json["schema"], "volley.capacity/1", "{}", s.stderr);
    let errs = capacity_schema_errors(&s.json);
    assert!(errs.is_empty(), "{}", errs.join("\n"));
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(s.out.join("capacity.json")).unwrap())
            .unwrap();
    assert_eq!(on_disk, s.json, "capacity.json is what --json - printed");
    for step in s.steps() {
        let path = step["path"].as_str().unwrap();
        assert!(Path::new(path).starts_with(&s.out), "{path}");
        let r: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(r["schema"], "volley.run/1");
        if step["window"].is_object() {
            check_window(step, &r);
        } else {
            assert_eq!(r["load"]["rate_rps"].as_f64(), step["target_rps"].as_f64());
            assert_eq!(r["requests"]["completed"], step["completed"], "{path}");
        }
        assert!(step["reason"].as_str().is_some_and(|r| !r.is_empty()));
    }
    assert!(s.out.join("capacity.csv").is_file());
    assert!(s.out.join("report.html").is_file());
    let markdown = std::fs::read_to_string(s.out.join("asked.md")).unwrap();
    assert!(
        markdown.contains("| # | server | sustainable req/s |"),
        "--markdown writes the search's table: {markdown}"
    );
}

/// A sweep's window holds what its seconds of the sweep's run hold.
fn check_window(step: &Value, run: &Value) {
    let w = &step["window"];
    let from = w["start_s"].as_f64().unwrap() as u64;
    let to = from + w["duration_s"].as_f64().unwrap() as u64;
    let seconds: Vec<&Value> = run["timeseries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| (from..to).contains(&p["t_s"].as_u64().unwrap()))
        .collect();
    assert_eq!(seconds.len() as u64, to - from, "{step}");
    let sum = |k: &str| seconds.iter().map(|p| p[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("sent"), w["sent"].as_u64().unwrap(), "{step}");
    assert_eq!(
        sum("completed"),
        step["completed"].as_u64().unwrap(),
        "{step}"
    );
    let due: f64 = seconds.iter().map(|p| p["target"].as_f64().unwrap()).sum();
    assert!((due - w["due"].as_f64().unwrap()).abs() < 0.5, "{step}");
}

/// Everything wrong with a `volley.capacity/1` document: where it breaks
/// `schema/capacity.schema.json`, and every key it has that the schema does not name (see
/// [`undocumented_keys`]); empty when it is right.
pub fn capacity_schema_errors(doc: &Value) -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/capacity.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::draft202012::new(&schema).expect("a valid draft 2020-12 schema");
    let mut errs: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{}: {}", e.instance_path, e))
        .collect();
    errs.extend(
        undocumented_keys(&schema, doc)
            .into_iter()
            .map(|k| format!("{k}: written but not in the schema")),
    );
    errs
}

/// The keys of `doc` (as JSON pointers) that `schema` does not name: following `properties`,
/// `items` and local `$ref`s, a key of an object is named when its schema lists it under
/// `properties` or describes every other key (`additionalProperties` as a schema,
/// `patternProperties`). The schemas allow unknown keys, as readers must (new optional keys
/// come without a schema bump), so validation alone cannot tell that a key the product writes
/// was never described; this can.
pub fn undocumented_keys(schema: &Value, doc: &Value) -> Vec<String> {
    use serde_json::Value;
    fn resolve<'a>(root: &'a Value, mut s: &'a Value) -> &'a Value {
        while let Some(r) = s.get("$ref").and_then(Value::as_str) {
            s = r
                .strip_prefix('#')
                .and_then(|p| root.pointer(p))
                .unwrap_or_else(|| panic!("unresolved $ref {r}"));
        }
        s
    }
    fn walk(root: &Value, s: &Value, doc: &Value, at: &str, out: &mut Vec<String>) {
        let s = resolve(root, s);
        match doc {
            Value::Object(m) => {
                let props = s.get("properties").and_then(Value::as_object);
                let rest = s
                    .get("additionalProperties")
                    .filter(|a| a.is_object())
                    .or_else(|| s.get("patternProperties").and(Some(&Value::Bool(true))));
                for (k, v) in m {
                    let here = format!("{at}/{k}");
                    match (props.and_then(|p| p.get(k)), rest) {
                        (Some(sub), _) => walk(root, sub, v, &here, out),
                        (None, Some(sub)) if sub.is_object() => walk(root, sub, v, &here, out),
                        (None, Some(_)) => {}
                        (None, None) => out.push(here),
                    }
                }
            }
            Value::Array(a) => {
                if let Some(items) = s.get("items") {
                    for (i, v) in a.iter().enumerate() {
                        walk(root, items, v, &format!("{at}/{i}"), out);
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(schema, schema, doc, "", &mut out);
    out
}

/// A server of known capacity: K slots busy S each, at most K requests in service, the rest
/// wait (an unbounded queue). It also measures how long a slot really stays busy per request:
/// a sleep overshoots its S (by tens of µs on an idle machine, more on a busy one), so the
/// true capacity, K ÷ that, is a little under K/S.
pub struct KnownCapacity {
    pub server: TestServer,
    /// Total busy time of the slots and requests served.
    busy: Arc<Mutex<(Duration, u32)>>,
    k: usize,
}

impl KnownCapacity {
    pub fn start(k: usize, s: Duration) -> Self {
        let slots = Arc::new((Mutex::new(k), Condvar::new()));
        let busy = Arc::new(Mutex::new((Duration::ZERO, 0)));
        let total = Arc::clone(&busy);
        let server = spawn(move |mut c, _| {
            while c.read_request() {
                let (lock, cv) = &*slots;
                let mut free = lock.lock().unwrap();
                while *free == 0 {
                    free = cv.wait(free).unwrap();
                }
                *free -= 1;
                drop(free);
                let t = Instant::now();
                std::thread::sleep(s);
                let held = t.elapsed();
                *lock.lock().unwrap() += 1;
                cv.notify_one();
                {
                    let mut b = total.lock().unwrap();
                    b.0 += held;
                    b.1 += 1;
                }
                if !c.write(OK) {
                    return;
                }
            }
        });
        KnownCapacity { server, busy, k }
    }

    /// K ÷ the mean time a slot was held, req/s.
    pub fn measured(&self) -> f64 {
        let (t, n) = *self.busy.lock().unwrap();
        self.k as f64 / (t.as_secs_f64() / n.max(1) as f64)
    }
}

/// One search at a time (two would share the machine's two cores and measure each other).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}
