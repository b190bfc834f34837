//! The guide (docs/guide/*.md) as it is written. Every ```` ```console ```` block of a page is
//! run: its `$ ` lines are the commands of one bash session per page (a line ending with `\`
//! goes on), run from a scratch folder shaped like a clone of this repository (`examples/`,
//! `servers/`, `suites/` linked), with this build's `volley` first on PATH. Each command's
//! output (stdout and stderr, as a terminal shows them) must still have the lines and fields
//! the page shows under it; numbers vary, so they are masked. A page whose output drifted fails
//! with a diff naming the page and its line. `UPDATE_GUIDE=1` writes the outputs of this run
//! into the pages instead (review the diff before committing it); `VOLLEY_BIN` runs another
//! build (`VOLLEY_BIN=$PWD/target/release/volley` for the outputs the pages show).
//!
//! The rules, also written for the pages' authors in docs/guide/README.md ("How these pages
//! stay true"):
//! - Ports 8080 and 8081 in a page are replaced by free ports, and back in the outputs. A
//!   command sent to the background (`&`) that names one of them is waited for until that port
//!   accepts connections, as a person waits for the server to say it listens.
//! - A fenced block with `file=NAME` in its info string (```` ```toml file=ab.toml ````) is
//!   written to NAME before the page's commands run.
//! - Lines are compared by their skeleton: numbers (and the units after them) masked, the
//!   machine a suite table names (CPU model, kernel) and a server's `Date:` masked, runs of
//!   spaces and of dashes made one, runs of equal skeletons made one (a table or a per-second
//!   series may have more or fewer rows).
//! - The headlines and warnings about the machine rather than the command (`shared machine`,
//!   `volley starved`, `other processes starved volley`, `client saturated`, `send lag p99 is`,
//!   `io_uring not used`) may come
//!   and go on either side.
//! - `vary="TEXT"` in a console block's info string: a line containing TEXT matches any line
//!   containing TEXT (a verdict or a search step that a busy machine moves).
//! - A command may exit non-zero only where the page shows it: `$?` in the command or in the
//!   next one.

use crate::common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The ports pages write; each run replaces them with free ones.
const PAGE_PORTS: [u16; 2] = [8080, 8081];

/// Each page's time limit: its commands are bounded by their own flags; this catches a hang.
const PAGE_LIMIT: Duration = Duration::from_secs(240);

/// Lines about the machine rather than about the command: present or not on either side.
const MACHINE_LINES: [&str; 6] = [
    "shared machine:",
    "volley starved:",
    "other processes starved volley",
    "client saturated:",
    "send lag p99 is",
    "io_uring not used",
];

/// One page at a time: they measure, and two at once would measure each other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The pages with runnable examples, and the programs each needs besides volley and bash.
const PAGES: &[(&str, &[&str])] = &[
    ("is-my-server-fast.md", &["taskset"]),
    ("before-after.md", &["python3"]),
    ("long-tail.md", &["java", "javac"]),
    ("where-does-the-time-go.md", &["taskset"]),
    ("how-many-users.md", &["jq"]),
    ("logged-in-users.md", &["python3", "curl", "taskset"]),
    ("capacity.md", &[]),
    ("in-ci.md", &[]),
    ("more-than-one-machine.md", &[]),
    ("grpc-and-websocket.md", &["go", "taskset"]),
];

#[test]
fn is_my_server_fast() {
    run_page("is-my-server-fast.md");
}

#[test]
fn before_after() {
    run_page("before-after.md");
}

#[test]
fn long_tail() {
    run_page("long-tail.md");
}

#[test]
fn where_does_the_time_go() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return common::skip(
            "not root: the page shows the server's syscalls, which perf counts for root",
        );
    }
    run_page("where-does-the-time-go.md");
}

#[test]
fn how_many_users() {
    run_page("how-many-users.md");
}

#[test]
fn logged_in_users() {
    run_page("logged-in-users.md");
}

#[test]
fn capacity() {
    run_page("capacity.md");
}

#[test]
fn in_ci() {
    run_page("in-ci.md");
}

#[test]
fn grpc_and_websocket() {
    run_page("grpc-and-websocket.md");
}

#[test]
fn more_than_one_machine() {
    run_page("more-than-one-machine.md");
}

/// Every page with a console block has its test above, and the index links every page.
#[test]
fn every_page_is_run_and_indexed() {
    let dir = guide_dir();
    let index = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".md") && f != "README.md")
        .collect();
    pages.sort();
    for page in &pages {
        assert!(
            index.contains(&format!("]({page})")),
            "docs/guide/README.md does not link {page}"
        );
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        let runnable = text.lines().any(|l| l.starts_with("```console"));
        let tested = PAGES.iter().any(|(p, _)| p == page);
        assert_eq!(
            runnable, tested,
            "{page}: a page with ```console blocks is listed in PAGES (tests/full/guide.rs) with a test, and only such a page"
        );
    }
    for (p, _) in PAGES {
        assert!(
            pages.iter().any(|x| x == p),
            "PAGES names {p}, which is not in docs/guide"
        );
    }
}

/// The reference page's flag tables list exactly the flags `--help` lists.
#[test]
fn reference_tables_list_every_flag() {
    let reference = std::fs::read_to_string(guide_dir().join("reference.md")).unwrap();
    let run_table = table_flags(&reference, "## `volley run` flags");
    let capacity_table = table_flags(&reference, "## `volley capacity` flags");
    let run_help = help_flags("run");
    let capacity_help = help_flags("capacity");
    let missing: Vec<_> = run_help.iter().filter(|f| !run_table.contains(f)).collect();
    assert!(
        missing.is_empty(),
        "reference.md's `volley run` table lacks {missing:?}"
    );
    let stale: Vec<_> = run_table.iter().filter(|f| !run_help.contains(f)).collect();
    assert!(
        stale.is_empty(),
        "reference.md's `volley run` table has {stale:?}, which `volley run --help` does not"
    );
    let stale: Vec<_> = capacity_table
        .iter()
        .filter(|f| !capacity_help.contains(f))
        .collect();
    assert!(stale.is_empty(), "reference.md's `volley capacity` table has {stale:?}, which `volley capacity --help` does not");
    let missing: Vec<_> = capacity_help
        .iter()
        .filter(|f| !capacity_table.contains(f) && !run_table.contains(f))
        .collect();
    assert!(
        missing.is_empty(),
        "reference.md's tables lack `volley capacity`'s {missing:?}"
    );
}

/// Every relative link of the README and the guide leads to a file, and every `#anchor` to a
/// heading of it (GitHub's ids: lower case, punctuation dropped, spaces made hyphens), so a
/// renamed section of the contract breaks this test, not the reader's click.
#[test]
fn links_lead_somewhere() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    for e in std::fs::read_dir(guide_dir()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            pages.push(p);
        }
    }
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for c in link.captures_iter(&text) {
            let target = &c[1];
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let path = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            if !path.exists() {
                broken.push(format!("{}: {target}: no such file", page.display()));
                continue;
            }
            if !anchor.is_empty() && !heading_ids(&path).iter().any(|id| id == anchor) {
                broken.push(format!("{}: {target}: no such heading", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The ids GitHub gives a Markdown file's headings.
fn heading_ids(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut in_code = false;
    let mut ids = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        if in_code || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim().to_lowercase();
        ids.push(
            title
                .chars()
                .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
                .map(|c| if c == ' ' { '-' } else { c })
                .collect(),
        );
    }
    ids
}

/// The long flags in the first column of the table under `heading`.
fn table_flags(page: &str, heading: &str) -> Vec<String> {
    let start = page
        .find(heading)
        .unwrap_or_else(|| panic!("reference.md has no heading {heading:?}"));
    let flag = regex::Regex::new(r"--[a-z0-9][a-z0-9.-]*").unwrap();
    let mut flags = Vec::new();
    for line in page[start..]
        .lines()
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
    {
        if !line.starts_with('|') {
            break;
        }
        let first = line.split('|').nth(1).unwrap_or("");
        flags.extend(flag.find_iter(first).map(|m| m.as_str().to_string()));
    }
    flags.sort();
    flags.dedup();
    flags
}

/// The long flags `volley SUB --help` lists (but --help and --version).
fn help_flags(sub: &str) -> Vec<String> {
    let o = common::volley(&[sub, "--help"], Duration::from_secs(30));
    assert!(o.status.success(), "{}", common::output_text(&o));
    // clap's flag lines: `  -c, --connections <N>` or `      --arrivals <A>` (descriptions are
    // indented further).
    let line = regex::Regex::new(r"^  (?:-[A-Za-z], |    )(--[a-z0-9][a-z0-9.-]*)").unwrap();
    let mut flags: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| line.captures(l).map(|c| c[1].to_string()))
        .filter(|f| f != "--help" && f != "--version")
        .collect();
    flags.sort();
    flags.dedup();
    flags
}

fn guide_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide")
}

/// A command of a page: where it is, what it says, what the page shows under it.
struct Cmd {
    /// Index of its `$ ` line in the page (0-based).
    line: usize,
    /// The command as bash gets it (continuation lines joined by newlines).
    text: String,
    /// The page's lines of output: indices `out_start..out_end`.
    out_start: usize,
    out_end: usize,
    vary: Vec<String>,
}

/// What the page asks for, in order.
enum Item {
    File { name: String, body: String },
    Cmd(Cmd),
}

fn parse(page: &str, lines: &[&str]) -> Vec<Item> {
    let mut items = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(info) = lines[i].strip_prefix("```") else {
            i += 1;
            continue;
        };
        let opts = options(info);
        let console = info.split_whitespace().next() == Some("console");
        let start = i + 1;
        let mut end = start;
        while end < lines.len() && lines[end] != "```" {
            end += 1;
        }
        assert!(
            end < lines.len(),
            "{page}:{}: the block is not closed",
            i + 1
        );
        if let Some(name) = opts.get("file") {
            let mut body = lines[start..end].join("\n");
            body.push('\n');
            items.push(Item::File {
                name: name[0].clone(),
                body,
            });
        } else if console {
            let vary = opts.get("vary").cloned().unwrap_or_default();
            let mut j = start;
            assert!(
                j == end || lines[j].starts_with("$ "),
                "{page}:{}: a console block starts with a `$ ` command",
                j + 1
            );
            while j < end {
                let line = j;
                let mut text = lines[j][2..].to_string();
                while text.ends_with('\\') && j + 1 < end {
                    j += 1;
                    text.push('\n');
                    text.push_str(lines[j]);
                }
                j += 1;
                let out_start = j;
                while j < end && !lines[j].starts_with("$ ") {
                    j += 1;
                }
                items.push(Item::Cmd(Cmd {
                    line,
                    text,
                    out_start,
                    out_end: j,
                    vary: vary.clone(),
                }));
            }
        }
        i = end + 1;
    }
    items
}

/// `key=value` and `key="a value"` words of an info string (a key may repeat).
fn options(info: &str) -> BTreeMap<String, Vec<String>> {
    let re = regex::Regex::new(r#"([a-z]+)=(?:"([^"]*)"|(\S+))"#).unwrap();
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in re.captures_iter(info) {
        let value = c.get(2).or(c.get(3)).unwrap().as_str().to_string();
        map.entry(c[1].to_string()).or_default().push(value);
    }
    map
}

/// `text` with every `from` port that stands alone (no digit either side) replaced.
fn replace_port(text: &str, from: u16, to: u16) -> String {
    let from = from.to_string();
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let alone = text[i..].starts_with(&from)
            && (i == 0 || !bytes[i - 1].is_ascii_digit())
            && !bytes.get(i + from.len()).is_some_and(u8::is_ascii_digit);
        if alone {
            out.push_str(&to.to_string());
            i += from.len();
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Whether bash sends (part of) the command to the background.
fn backgrounds(cmd: &str) -> bool {
    cmd.split_whitespace()
        .any(|w| w == "&" || (w.ends_with('&') && !w.ends_with("&&") && !w.ends_with(">&")))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn run_page(name: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (_, tools) = PAGES.iter().find(|(p, _)| *p == name).unwrap();
    for tool in *tools {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return common::skip(&format!(
                "docs/guide/{name} needs {tool} (servers/install.sh and scripts/install-test-deps.sh name what installs it)"
            ));
        }
    }
    let path = guide_dir().join(name);
    let page = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = page.lines().collect();
    let items = parse(name, &lines);
    let cmds: Vec<&Cmd> = items
        .iter()
        .filter_map(|i| match i {
            Item::Cmd(c) => Some(c),
            Item::File { .. } => None,
        })
        .collect();
    assert!(!cmds.is_empty(), "{name} has no ```console command");

    // The scratch folder: the page's files, the repository's folders the pages name, volley.
    let dir = common::scratch("guide", name.trim_end_matches(".md"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join(".guide/bin")).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for linked in ["examples", "servers", "suites"] {
        std::os::unix::fs::symlink(root.join(linked), dir.join(linked)).unwrap();
    }
    let bin = std::fs::canonicalize(common::volley_bin()).unwrap();
    std::os::unix::fs::symlink(&bin, dir.join(".guide/bin/volley")).unwrap();
    let ports: Vec<(u16, u16)> = PAGE_PORTS.iter().map(|&p| (p, free_port())).collect();
    let substituted = |s: &str| {
        ports
            .iter()
            .fold(s.to_string(), |s, &(from, to)| replace_port(&s, from, to))
    };

    let mut script = String::from("cd \"$(dirname \"$0\")/..\"\n__rc=0\n");
    let mut n = 0;
    for item in &items {
        match item {
            Item::File { name: file, body } => {
                std::fs::write(dir.join(file), substituted(body)).unwrap();
            }
            Item::Cmd(c) => {
                let text = substituted(&c.text);
                // `exec` sets `$?` to 0: the last command's status is given back after it.
                let _ = writeln!(script, "exec >.guide/{n}.out 2>&1; (exit $__rc)");
                let _ = writeln!(script, "{text}");
                let _ = writeln!(script, "__rc=$?; echo $__rc >.guide/{n}.rc");
                if backgrounds(&text) {
                    for &(_, port) in ports.iter().filter(|(_, p)| text.contains(&p.to_string())) {
                        let _ = writeln!(
                            script,
                            "for __i in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && break; sleep 0.05; done"
                        );
                    }
                }
                n += 1;
            }
        }
    }
    script.push_str("exec >/dev/null 2>&1\n");
    std::fs::write(dir.join(".guide/page.sh"), &script).unwrap();

    let path_var = format!(
        "{}:{}",
        dir.join(".guide/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let started = Instant::now();
    let mut child = {
        use std::os::unix::process::CommandExt;
        Command::new("bash")
            .args(["--noprofile", "--norc"])
            .arg(dir.join(".guide/page.sh"))
            .env("PATH", path_var)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("bash runs")
    };
    let pgid = child.id() as i32;
    let finished = loop {
        if child.try_wait().unwrap().is_some() {
            break true;
        }
        if started.elapsed() > PAGE_LIMIT {
            break false;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // What the page left running (a server sent to the background) ends with the session.
    // SAFETY: signals to the process group this test created.
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: as above.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = child.wait();
    eprintln!("{name}: {:.1} s", started.elapsed().as_secs_f64());

    let scratch = dir.display().to_string();
    let outputs: Vec<(Option<i32>, String)> = (0..cmds.len())
        .map(|k| {
            let rc = std::fs::read_to_string(dir.join(format!(".guide/{k}.rc")))
                .ok()
                .and_then(|s| s.trim().parse().ok());
            let raw = std::fs::read(dir.join(format!(".guide/{k}.out"))).unwrap_or_default();
            let mut text = String::from_utf8_lossy(&raw).replace(&scratch, ".");
            for &(from, to) in &ports {
                text = replace_port(&text, to, from);
            }
            (rc, text)
        })
        .collect();
    if !finished {
        let running = outputs.iter().position(|(rc, _)| rc.is_none()).unwrap_or(0);
        panic!(
            "docs/guide/{name}:{}: `{}` was still running after {PAGE_LIMIT:?}; its output so far:\n{}",
            cmds[running].line + 1,
            cmds[running].text,
            outputs[running].1
        );
    }

    let mut problems = Vec::new();
    for (k, c) in cmds.iter().enumerate() {
        let (rc, out) = &outputs[k];
        let shown =
            cmds.get(k + 1).is_some_and(|next| next.text.contains("$?")) || c.text.contains("$?");
        match rc {
            Some(0) => {}
            Some(code) if shown => {
                let _ = code;
            }
            other => problems.push(format!(
                "docs/guide/{name}:{}: `{}` exited {other:?}, and the page does not show it (`echo $?`):\n{out}",
                c.line + 1,
                c.text
            )),
        }
    }
    if std::env::var_os("UPDATE_GUIDE").is_some() {
        let mut new: Vec<String> = Vec::new();
        let mut at = 0;
        for (k, c) in cmds.iter().enumerate() {
            new.extend(lines[at..c.out_start].iter().map(|l| l.to_string()));
            new.extend(outputs[k].1.lines().map(|l| l.trim_end().to_string()));
            at = c.out_end;
        }
        new.extend(lines[at..].iter().map(|l| l.to_string()));
        let mut text = new.join("\n");
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        eprintln!("UPDATE_GUIDE: wrote the outputs of this run into docs/guide/{name}");
    } else {
        for (k, c) in cmds.iter().enumerate() {
            let expected: Vec<&str> = lines[c.out_start..c.out_end].to_vec();
            let actual: Vec<&str> = outputs[k].1.lines().collect();
            if let Some(diff) = differences(&expected, &actual, &c.vary, c.out_start) {
                problems.push(format!(
                    "docs/guide/{name}:{}: the output of `{}` no longer has the page's lines (- the page, with its line; + this run):\n{diff}\nthis run's output:\n{}",
                    c.line + 1,
                    c.text,
                    outputs[k].1
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n(UPDATE_GUIDE=1 writes this run's outputs into the page after a deliberate change; review the diff)",
        problems.join("\n\n")
    );
}

/// Whether the line is a headline or warning about the machine, not the command: `!! shared
/// machine: …`, `! send lag p99 is …`, or one quoted after a prefix (`volley merge: warning:
/// shard shard-0.json: shared machine: …`).
fn about_the_machine(line: &str) -> bool {
    let t = line.trim_start();
    let t = t
        .strip_prefix("!! ")
        .or_else(|| t.strip_prefix("! "))
        .unwrap_or(t);
    MACHINE_LINES
        .iter()
        .any(|m| t.starts_with(m) || t.contains(&format!(": {m}")))
}

/// The line with numbers, units, alignment and rules masked.
fn mask(line: &str) -> String {
    use std::sync::OnceLock;
    static RES: OnceLock<[(regex::Regex, &str); 10]> = OnceLock::new();
    let res = RES.get_or_init(|| {
        let re = |s: &str| regex::Regex::new(s).unwrap();
        [
            // The machine a suite ran on (its CPU model and kernel), as its table heads it.
            (
                re(r"^.*?, (\d+) CPUs?, Linux [^;,]+"),
                "<cpu>, $1 CPUs, Linux <kernel>",
            ),
            // A server's `Date:` (its day and month are words).
            (
                re(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT\b"),
                "<http-date>",
            ),
            (re(r"\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?"), "N"),
            // A sign that starts a number is part of it (`+2.2%`, `-26.9%`), a hyphen
            // between two words or numbers is not (`step-01`, `897.5-1,095.5`).
            (re(r"(^|[^\w])[-+−]N"), "${1}N"),
            (re(r"N ?(?:ns|µs|us|ms|s|min|h)\b"), "N<t>"),
            (re(r"N<t>(?: N<t>)+"), "N<t>"),
            (re(r"N ?(?:B|KiB|MiB|GiB|TiB|K|M|G)\b"), "N<b>"),
            (re(r"-{3,}"), "---"),
            (re(r"─{2,}"), "─"),
            (re(r"\s+"), " "),
        ]
    });
    let mut s = line.trim().to_string();
    for (re, to) in res.iter() {
        s = re.replace_all(&s, *to).into_owned();
    }
    s
}

/// The lines' skeletons, each with the index of the first line it stands for.
fn skeleton(lines: &[&str], vary: &[String]) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let s = if let Some(v) = vary.iter().find(|v| line.contains(v.as_str())) {
            format!("<a line with {v:?}>")
        } else if about_the_machine(line) {
            continue;
        } else {
            mask(line)
        };
        if out.last().is_none_or(|(last, _)| *last != s) {
            out.push((s, i));
        }
    }
    // A machine line dropped from the end of an output leaves the blank line before it.
    while out.last().is_some_and(|(s, _)| s.is_empty()) {
        out.pop();
    }
    out
}

/// None when `actual` has the lines of `expected`; else a diff of their skeletons, the page's
/// lines numbered (`first` is the page index of `expected[0]`).
fn differences(
    expected: &[&str],
    actual: &[&str],
    vary: &[String],
    first: usize,
) -> Option<String> {
    let e = skeleton(expected, vary);
    let a = skeleton(actual, vary);
    if e.iter().map(|x| &x.0).eq(a.iter().map(|x| &x.0)) {
        return None;
    }
    // Longest common subsequence, then the lines outside it.
    let (n, m) = (e.len(), a.len());
    let mut len = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            len[i][j] = if e[i].0 == a[j].0 {
                len[i + 1][j + 1] + 1
            } else {
                len[i + 1][j].max(len[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut diff) = (0, 0, String::new());
    while i < n || j < m {
        if i < n && j < m && e[i].0 == a[j].0 {
            i += 1;
            j += 1;
        } else if j == m || (i < n && len[i + 1][j] >= len[i][j + 1]) {
            let _ = writeln!(diff, "- line {}: {}", first + e[i].1 + 1, expected[e[i].1]);
            i += 1;
        } else {
            let _ = writeln!(diff, "+ {}", actual[a[j].1]);
            j += 1;
        }
    }
    Some(diff)
}

#[test]
fn masks_numbers_units_and_alignment() {
    assert_eq!(
        mask("AMD EPYC, 2 CPUs, Linux 6.18.44-fc-v595; servers pinned to CPU 1"),
        mask("Intel(R) Xeon(R) Processor, 2 CPUs, Linux 6.18.44-fc-v669; servers pinned to CPU 1")
    );
    assert_eq!(
        mask("    p99.99       3.14 ms"),
        mask("    p99.99        421 µs")
    );
    assert_eq!(
        mask("  Throughput   100,784.5 req/s   (201,644 responses in 2.00 s)"),
        "Throughput N req/s (N responses in N<t>)"
    );
    assert_eq!(
        mask("Bracket 1–2 after 9 steps, 2 min 10 s."),
        mask("Bracket 1–2 after 9 steps, 50 s.")
    );
    assert_eq!(mask("RSS 13.3 MiB"), mask("RSS 950 KiB"));
    assert_eq!(
        mask("  Date: Sun, 29 Nov 2026 02:45:28 GMT"),
        mask("  Date: Mon, 30 Nov 2026 00:22:16 GMT")
    );
    assert_eq!(mask("(p=0.012)"), mask("(p=3.5e-4)"));
    assert_eq!(
        mask("1.022   +2.2%  CI -3.1 to +4%"),
        mask("0.731  -26.9%  CI 1 to -4%")
    );
    assert_ne!(mask("step-01"), mask("step 01"));
    assert_ne!(mask("errors 0"), mask("errors none"));
    assert!(about_the_machine(
        "!! shared machine: the CPUs were 0.0 % idle"
    ));
    assert!(about_the_machine("  ! send lag p99 is 3 ms"));
    assert!(!about_the_machine(
        "!! target rate not reached: 1 of 2 req/s"
    ));
    assert!(about_the_machine(
        "volley merge: warning: shard s-0.json: shared machine: the CPUs were 0.0 % idle"
    ));
    let v = vec!["step ".to_string()];
    let a = ["x", "step  1: 1 pass", "step  2: fail", "y"];
    let b = ["x", "step  1: 1 pass", "y"];
    assert!(differences(&a, &b, &v, 0).is_none());
    assert!(differences(&a, &["x", "y"], &v, 0).is_some());
    let with = [
        "x",
        "",
        "!! shared machine: busy",
        "",
        "y",
        "",
        "  ! send lag p99 is 3 ms",
    ];
    assert!(differences(&["x", "", "y"], &with, &[], 0).is_none());
    assert_eq!(
        replace_port("127.0.0.1:8080/ 18080 8080", 8080, 41234),
        "127.0.0.1:41234/ 18080 41234"
    );
    assert!(backgrounds("volley serve --port 8080 & server=$!"));
    assert!(!backgrounds("a && b 2>&1"));
}
