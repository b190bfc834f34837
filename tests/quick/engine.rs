//! The engine as a library, without any flag: a load spec in, measurements and observer events
//! out, against volley's built-in server in this process.

use std::sync::atomic::AtomicUsize;
use std::time::{Duration, SystemTime};

use volley::engine::{self, Observer, Route};
use volley::plan::{LoadSpec, Plan, Target};
use volley::stats::aggregate::FinishedBucket;

fn spec(target: Target, duration: Duration, warmup: Duration, rate: Option<f64>) -> LoadSpec {
    LoadSpec {
        threads: 2,
        rate_rps: rate,
        seed: Some(7),
        warmup,
        io: io_choice(),
        ..LoadSpec::closed_loop(target, 4, duration)
    }
}

/// `make test` runs this file again on epoll (`VOLLEY_IO=epoll`).
fn io_choice() -> volley::plan::IoChoice {
    match std::env::var("VOLLEY_IO").as_deref() {
        Ok("epoll") => volley::plan::IoChoice::Epoll,
        Ok("uring") => volley::plan::IoChoice::Uring,
        _ => volley::plan::IoChoice::Auto,
    }
}

fn tcp(addr: std::net::SocketAddr) -> Route {
    Route::tcp(addr, io_choice()).unwrap()
}

fn target(addr: std::net::SocketAddr) -> Target {
    Target::http(addr, "/")
}

/// Records what the engine told it, in order.
#[derive(Default)]
struct Events {
    log: Vec<String>,
    completed_in_seconds: u64,
}

impl Observer for Events {
    fn start(&mut self, _started_at: SystemTime) {
        self.log.push("start".into());
    }
    fn thread(&mut self, _tid: i32) {
        self.log.push("thread".into());
    }
    fn measuring(&mut self, _now_ns: u64) {
        self.log.push("measuring".into());
    }
    fn second(&mut self, b: &FinishedBucket, _elapsed_s: f64) {
        self.completed_in_seconds += b.point.completed;
        self.log.push(format!("second {}", b.point.t_s));
    }
    fn done(&mut self) {
        self.log.push("done".into());
    }
}

#[test]
fn a_closed_loop_reports_to_its_observer_in_order() {
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let spec = spec(
        target(server.addr),
        Duration::from_millis(2200),
        Duration::from_millis(300),
        None,
    );
    let plan = Plan::new(&spec, 7);
    let mut events = Events::default();
    let out = engine::run(
        &spec,
        plan,
        tcp(server.addr),
        &AtomicUsize::new(0),
        &mut events,
    )
    .unwrap();

    let c = &out.agg.counts;
    assert!(c.completed > 100, "{} responses", c.completed);
    assert_eq!(c.errors.total(), 0);
    assert!(
        out.agg.warmup.completed > 0,
        "the warm-up ran and was kept apart"
    );
    assert!(!out.interrupted);
    assert!((2.2..3.0).contains(&out.elapsed_s), "{}", out.elapsed_s);
    // Every measured response went through exactly one finished second.
    assert_eq!(events.completed_in_seconds, c.completed);
    // start, one `thread` per worker, `measuring` once at t0, seconds in order, `done` last.
    assert_eq!(events.log[0], "start");
    assert_eq!(events.log.iter().filter(|e| *e == "thread").count(), 2);
    assert_eq!(events.log.iter().filter(|e| *e == "measuring").count(), 1);
    assert_eq!(events.log.last().unwrap(), "done");
    let seconds: Vec<&String> = events
        .log
        .iter()
        .filter(|e| e.starts_with("second"))
        .collect();
    assert_eq!(seconds, ["second 0", "second 1", "second 2"]);
    let measuring = events.log.iter().position(|e| e == "measuring").unwrap();
    let first_second = events
        .log
        .iter()
        .position(|e| e.starts_with("second"))
        .unwrap();
    assert!(measuring < first_second);
    // What the server answered is what volley sent, warm-up included.
    let sent = c.sent + out.agg.warmup.sent;
    let answered = server.requests.load(std::sync::atomic::Ordering::SeqCst);
    assert!(answered >= c.completed + out.agg.warmup.completed && answered <= sent);
}

#[test]
fn an_open_loop_keeps_its_rate_and_an_interrupt_drains() {
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let spec = spec(
        target(server.addr),
        Duration::from_secs(2),
        Duration::ZERO,
        Some(200.0),
    );
    let out = engine::run(
        &spec,
        Plan::new(&spec, 7),
        tcp(server.addr),
        &AtomicUsize::new(0),
        &mut engine::Observers(vec![]),
    )
    .unwrap();
    // 200 req/s for 2 s: 400 requests due, each sent once.
    assert_eq!(out.agg.counts.sent, 400);
    assert_eq!(out.agg.counts.completed, 400);
    assert!(
        !out.agg.lag.is_empty(),
        "the open loop records its schedule lag"
    );

    // A Ctrl-C before the start: the run drains at once and says it was interrupted.
    let pressed = AtomicUsize::new(1);
    let long = self::spec(
        target(server.addr),
        Duration::from_secs(30),
        Duration::ZERO,
        None,
    );
    let t = std::time::Instant::now();
    let out = engine::run(
        &long,
        Plan::new(&long, 7),
        tcp(server.addr),
        &pressed,
        &mut engine::Observers(vec![]),
    )
    .unwrap();
    assert!(out.interrupted);
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

#[test]
fn warm_up_requests_answered_after_t0_count_in_the_warm_up() {
    // Every response takes 200 ms and t0 is 300 ms in: each connection's second warm-up
    // request is answered after t0. Whatever the timing, every request written was answered
    // in the drain, so the server's count is the measured and warm-up responses together.
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let mut t = target(server.addr);
    t.path = "/delay?ms=200".into();
    t.url = format!("http://{}/delay?ms=200", server.addr);
    let spec = spec(
        t,
        Duration::from_millis(500),
        Duration::from_millis(300),
        None,
    );
    let plan = Plan::new(&spec, 7);
    let observers = &mut engine::Observers(vec![]);
    let out = engine::run(
        &spec,
        plan,
        tcp(server.addr),
        &AtomicUsize::new(0),
        observers,
    )
    .unwrap();
    let (c, w) = (&out.agg.counts, &out.agg.warmup);
    assert_eq!(c.errors.total() + w.errors.total(), 0);
    assert!(w.sent >= 4, "{w:?}");
    assert_eq!(
        w.completed, w.sent,
        "every warm-up request written is counted"
    );
    let answered = server.requests.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(answered, c.completed + w.completed);
}
