#!/usr/bin/env python3
"""Render the raw outputs of bench/compare.sh (OUT_DIR) as Markdown tables and
rewrite their sections of BENCH_MD. Run by compare.sh; by hand:
    OUT_DIR=target/bench-compare/<time> BENCH_MD=BENCHMARKS.md ROOT=. python3 bench/compare_report.py
(or REPORT_FROM=<dir> bench/compare.sh)."""
import json, os, re, statistics, sys

out_dir = os.environ["OUT_DIR"]
ROOT = os.environ.get("ROOT", ".")
BENCH_MD = os.environ.get("BENCH_MD", os.path.join(ROOT, "BENCHMARKS.md"))
UPDATE_MD = os.environ.get("UPDATE_MD", "1")


def fail(msg):
    print(f"[compare] error: {msg}", file=sys.stderr)
    sys.exit(1)


try:
    E = json.load(open(os.path.join(out_dir, "meta.json")))
except Exception as ex:
    fail(f"cannot read {out_dir}/meta.json: {ex}")
reps = int(E["REPS"])
TABLES = E["TABLES"].split()
OTHER_MAX, BUSY_MAX = int(E["OTHER_MAX"]), int(E["BUSY_MAX"])
HZ = os.sysconf("SC_CLK_TCK")
COMMANDS = {}
for line in open(os.path.join(out_dir, "commands.tsv")):
    k, v = line.rstrip("\n").split("\t", 1)
    COMMANDS[k] = v
ORDER = []  # (seq, rep, cell, attempts)
for line in open(os.path.join(out_dir, "runs.tsv")):
    seq, rep, cell, attempts = line.split()
    ORDER.append((int(seq), int(rep), cell, int(attempts)))

med = statistics.median

# ---------------------------------------------------------------- parsers


def to_us(v, unit):
    return float(v) * {"us": 1, "ms": 1e3, "s": 1e6, "m": 6e7}[unit]


def lat_us(s):
    v, unit = re.match(r"([\d.]+)(\w+)", s).groups()
    return to_us(v, unit)


def read(path):
    try:
        return open(path).read()
    except Exception as ex:
        fail(f"cannot read {path}: {ex}")


def parse_wrk(base):
    text = read(base + ".out")
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m),", text)
    r = re.search(r"Requests/sec:\s*([\d.]+)", text)
    lat = dict(re.findall(r"^\s*(50|99)%\s+([\d.]+\w+)", text, re.M))
    avg = re.search(r"^\s*Latency\s+([\d.]+\w+)", text, re.M)
    if not (m and r and "50" in lat and "99" in lat):
        fail(f"cannot parse wrk output {base}.out")
    notes = [l.strip() for l in text.splitlines() if re.search(r"Socket errors|Non-2xx", l)]
    n = int(m.group(1))
    return dict(requests=n, connections=None, rps=float(r.group(1)), p50=lat_us(lat["50"]), p99=lat_us(lat["99"]),
                mean=lat_us(avg.group(1)) if avg else None, notes=notes, self_cpu=None)


def parse_volley(base):
    try:
        d = json.load(open(base + ".json"))
    except Exception as ex:
        fail(f"cannot read {base}.json: {ex}")
    notes = []
    errs = d["requests"]["errors"]
    if errs:
        notes.append(f"errors {errs}: " + ", ".join(f"{k} {v}" for k, v in d["errors"].items() if v))
    for k in ("unfinished", "unsent"):
        if d["requests"].get(k):
            notes.append(f"{k} {d['requests'][k]}")
    non200 = {k: v for k, v in d.get("status_codes", {}).items() if k != "200"}
    if non200:
        notes.append(f"statuses {non200}")
    c = d.get("client", {})
    if c.get("saturated"):
        frac = c.get("saturated_fraction") or 0
        lag99 = (d.get("schedule_lag_us") or {}).get("p99")
        why = [f"{frac:.0%} of seconds at ≥ 90 % CPU"] if frac else []
        if lag99 is not None and lag99 > 1000:
            why.append(f"schedule lag p99 {lag99:,} µs > 1 ms")
        notes.append("volley flags client saturated" + (f" ({'; '.join(why)})" if why else ""))
    for w in d.get("warnings", []):
        if not w.startswith(("closed loop:", "client saturated")):
            notes.append("volley warning: " + w)
    if d["connections"].get("closed_by_server") and d["load"].get("keepalive", True):
        notes.append(f"closed by server {d['connections']['closed_by_server']}")
    self_cpu = (c.get("cpu_user_s") or 0) + (c.get("cpu_sys_s") or 0)
    return dict(requests=d["requests"]["completed"], connections=d["connections"]["opened"], rps=d["throughput_rps"],
                p50=d["latency_us"]["p50"], p99=d["latency_us"]["p99"], mean=d["latency_us"]["mean"],
                notes=notes, self_cpu=self_cpu, json=d)


def parse_h2load(base):
    text = read(base + ".out")
    f = re.search(r"finished in ([\d.]+)(us|ms|s|m), ([\d.]+) req/s", text)
    q = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", text)
    s = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
    t = re.search(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)", text)
    if not (f and q and s):
        fail(f"cannot parse h2load output {base}.out")
    total, started, done, ok, failed, errored, timeout = map(int, q.groups())
    notes = []
    if failed or errored or timeout:
        notes.append(f"failed {failed}, errored {errored}, timeout {timeout}")
    if int(s.group(1)) != done:
        notes.append(f"non-2xx: {int(s.group(3))} 4xx, {int(s.group(4))} 5xx")
    return dict(requests=done, connections=None, rps=float(f.group(3)), p50=None, p99=None,
                mean=lat_us(t.group(3)) if t else None, notes=notes, self_cpu=None)


def parse_oha(base):
    try:
        d = json.load(open(base + ".out"))
    except Exception as ex:
        fail(f"cannot read oha JSON {base}.out: {ex}")
    s = d["summary"]
    codes = {str(k): v for k, v in (d.get("statusCodeDistribution") or {}).items()}
    n = sum(codes.values())
    errs = dict(d.get("errorDistribution") or {})
    notes = []
    aborted = errs.pop("aborted due to deadline", 0)
    if aborted:  # in flight at the deadline: neither completed nor an error (oha counts them in its req/s)
        notes.append(f"aborted at the deadline {aborted}")
    if errs:
        notes.append("errors: " + ", ".join(f"{k} {v}" for k, v in errs.items()))
    non200 = {k: v for k, v in codes.items() if k != "200"}
    if non200:
        notes.append(f"statuses {non200}")
    pct = d.get("latencyPercentiles") or {}
    sec = lambda v: None if v is None else v * 1e6
    return dict(requests=n, connections=None, rps=n / s["total"], p50=sec(pct.get("p50")), p99=sec(pct.get("p99")),
                mean=sec(s.get("average")), notes=notes, self_cpu=None)


PARSE = dict(wrk=parse_wrk, volley=parse_volley, h2load=parse_h2load, oha=parse_oha)


def tool_of(cell):
    if cell == "ka-baseline":
        return E.get("BASELINE_NAME") or "volley baseline"
    if cell.endswith("-epoll"):
        return "volley --io epoll"
    if cell == "ka-volley":
        return f"volley --io {E.get('VOLLEY_IO_MAIN', 'uring')}"
    return {"open-fast": "volley", "open-slow": "volley"}.get(cell, cell.split("-", 1)[1])


def read_time(base):
    try:
        u, s, e, m = read(base + ".time").split()[-4:]
        return float(u), float(s), float(e), int(m) * 1024
    except Exception as ex:
        fail(f"cannot read {base}.time: {ex}")


def during(base, client_cpu):
    """nginx CPU and the CPU used by everything else while the client ran (% of one core)."""
    try:
        (b0, t0, n0), (b1, t1, n1) = [map(int, l.split()) for l in read(base + ".ticks").splitlines()[:2]]
    except Exception as ex:
        fail(f"cannot read {base}.ticks: {ex}")
    wall = (t1 - t0) / HZ / int(E["NCPU"])
    nginx = (n1 - n0) / HZ
    other = (b1 - b0) / HZ - nginx - client_cpu
    return dict(nginx_pct=100 * nginx / wall, other_pct=max(0.0, 100 * other / wall))


RUNS = []
for seq, rep, cell, attempts in ORDER:
    base = os.path.join(out_dir, f"{cell}-rep{rep}")
    tool = tool_of(cell)
    r = PARSE["volley" if tool.startswith("volley") else tool](base)
    u, s, e, rss = read_time(base)
    if r["requests"] <= 0:
        fail(f"{cell} rep {rep}: no requests completed")
    tw = [int(x) for x in read(base + ".tw").split()] + [0, 0]
    r.update(seq=seq, rep=rep, cell=cell, tool=tool, attempts=attempts, user=u, sys=s, wall=e, rss=rss,
             busy=int(read(base + ".busy")), tw_before=tw[0], tw_after=tw[1], **during(base, u + s),
             cpu_per_m=(u + s) / r["requests"] * 1e6)
    if r["busy"] > BUSY_MAX:
        r["notes"].insert(0, f"**machine {r['busy']} % busy before the run**")
    if r["other_pct"] > OTHER_MAX:
        r["notes"].insert(0, "**other work during the run**")
    if attempts > 1:
        r["notes"].insert(0, f"attempt {attempts} (earlier ones had other work on the machine)")
    if r["self_cpu"] is not None:
        r["notes"].insert(0, f"self-reported CPU {r['self_cpu']:.2f} s")
    RUNS.append(r)


def runs_of(cell):
    return [r for r in RUNS if r["cell"] == cell]


# ---------------------------------------------------------------- formatting


def us(v):
    if v is None:
        return "—"
    return f"{v / 1000:,.2f} ms" if v >= 10000 else f"{v:,.0f} µs"


def rng(xs):
    return f"{min(xs):.2f}–{max(xs):.2f}" if len(xs) > 1 else f"{xs[0]:.2f}"


def mib(b):
    return f"{b / 2**20:.1f} MiB"


def medof(rs, k):
    xs = [r[k] for r in rs if r[k] is not None]
    return med(xs) if xs else None


def header_lines(title_cells):
    L = [f"Run {E['DATE']} by `bench/compare.sh` (REPS={reps}, DURATION={E['DURATION']}, "
         f"CONNECTIONS={E['CONNECTIONS']}); raw outputs were in `{os.path.relpath(out_dir, ROOT)}/`.", ""]
    L.append(f"- Machine: {E['CPU_MODEL'] or 'unknown CPU'}, {E['NCPU']} CPUs, {E['KERNEL']}; "
             f"nginx on CPU {E['SERVER_CPU']}, clients on CPU {E['CLIENT_CPU']}")
    L.append(f"- Versions: {E['VOLLEY_VERSION']} · {E['WRK_VERSION']} · {E['OHA_VERSION']} · "
             f"{E['H2LOAD_VERSION']} · {E['NGINX_VERSION']}")
    rs = [r for r in RUNS if r["cell"] in title_cells]
    bad = [r for r in rs if r["busy"] > BUSY_MAX or r["other_pct"] > OTHER_MAX]
    if bad:
        L.append(f"- **Warning:** {len(bad)} of {len(rs)} runs had other work on the machine "
                 f"(over {BUSY_MAX} % busy just before, or over {OTHER_MAX} % of a core used by neither client "
                 "nor nginx during the run); their numbers are noisy.")
    L += ["", "```sh", E["CMD_NGINX"]]
    L += [COMMANDS[c] for c in title_cells if c in COMMANDS]
    L += [f"# {E['CMD_VOLLEY_NOTE']}", "```", ""]
    return L


def raw_table(cells, conn_col=False):
    L = ["All runs, in the order they ran (# = position in the whole session; TIME_WAIT = sockets in "
         "TIME_WAIT on the machine before → after the run):", ""]
    cols = "| # | rep | tool | req/s | requests |" + (" connections |" if conn_col else "") + \
        " user s | sys s | CPU-s per M req | p50 | p99 | max RSS | nginx CPU | other CPU | TIME_WAIT | notes |"
    L.append(cols)
    L.append("|" + "---:|" * 2 + "---|" + "---:|" * (11 + conn_col) + "---|")
    for r in sorted((r for r in RUNS if r["cell"] in cells), key=lambda r: r["seq"]):
        conn = f" {r['connections']:,} |" if conn_col and r["connections"] is not None else (" — |" if conn_col else "")
        L.append(f"| {r['seq']} | {r['rep']} | {label(r['cell'])} | {r['rps']:,.0f} | {r['requests']:,} |{conn} "
                 f"{r['user']:.2f} | {r['sys']:.2f} | {r['cpu_per_m']:.2f} | {us(r['p50'])} | {us(r['p99'])} | "
                 f"{mib(r['rss'])} | {r['nginx_pct']:.0f} % | {r['other_pct']:.0f} % | "
                 f"{r['tw_before']:,} → {r['tw_after']:,} | {'; '.join(r['notes'])} |")
    return L


def label(cell):
    io = E.get('VOLLEY_IO_MAIN', 'uring')
    return {"pipe-volley": f"volley --pipeline {E['PIPELINE']} --io {io}", "pipe-h2load": f"h2load -m {E['PIPELINE']}",
            "pipe-epoll": f"volley --pipeline {E['PIPELINE']} --io epoll",
            "close-volley": f"volley --no-keepalive --io {io}", "close-wrk": "wrk + Connection: close",
            "close-epoll": "volley --no-keepalive --io epoll",
            "open-fast": f"volley -R {int(E['OPEN_RATE']):,}", "open-slow": f"volley -R {int(E['SLOW_RATE']):,}"
            }.get(cell, tool_of(cell))


def paired_ratio(vcell, pcell, key="cpu_per_m"):
    """per repetition: peer CPU per request / volley CPU per request = volley's requests per CPU-s / peer's."""
    out = []
    for rep in range(1, reps + 1):
        v = [r for r in runs_of(vcell) if r["rep"] == rep]
        p = [r for r in runs_of(pcell) if r["rep"] == rep]
        if v and p:
            out.append(p[0][key] / v[0][key])
    return out


def verdict(x, target):
    return "met" if x >= target else "NOT met"


# ---------------------------------------------------------------- sections
SECTIONS = {}
SUMMARY = {}

if "keepalive" in TABLES:
    cells = [c for c in ("ka-wrk", "ka-volley", "ka-epoll", "ka-baseline", "ka-oha", "ka-h2load") if runs_of(c)]
    L = header_lines(cells)
    L.append(f"Closed loop, {E['CONNECTIONS']} keep-alive connections, one client thread, GET `/`. Medians of {reps} "
             f"run{'s' if reps > 1 else ''} per tool; client CPU = user + sys from `/usr/bin/time`; latency from each "
             "tool's own report (wrk `--latency`, volley `latency_us`, oha `latencyPercentiles`; h2load prints only "
             "min/max/mean/sd, so only its mean is shown). The last column is volley's requests per client "
             "CPU-second divided by the tool's, paired within each repetition (median, range).")
    L.append("")
    L.append("| tool | req/s | CPU-s per million requests | p50 | p99 | mean | volley ÷ tool, requests per CPU-s |")
    L.append("|---|---:|---:|---:|---:|---:|---:|")
    summ = {}
    for c in cells:
        rs = runs_of(c)
        s = {k: medof(rs, k) for k in ("rps", "cpu_per_m", "p50", "p99", "mean")}
        ratio = paired_ratio("ka-volley", c) if c != "ka-volley" else None
        s["ratio"] = ratio
        summ[tool_of(c)] = s
        rcol = "—" if ratio is None else f"**{med(ratio):.2f}** ({rng(ratio)})"
        L.append(f"| {tool_of(c)} | {s['rps']:,.0f} | {s['cpu_per_m']:.2f} | {us(s['p50'])} | {us(s['p99'])} | "
                 f"{us(s['mean'])} | {rcol} |")
    if E.get("OHA_NOTE"):
        L += ["", f"oha: {E['OHA_NOTE']}."]
    L.append("")
    if "wrk" in summ:
        x = med(summ["wrk"]["ratio"])
        thr = paired_ratio("ka-volley", "ka-wrk", "rps")
        goal = 1.25 if E.get("VOLLEY_IO_MAIN", "uring") == "uring" else 1.10
        L.append(f"**Target {tool_of('ka-volley')} ≥ {goal:.2f}× wrk in requests per client CPU-second: {x:.2f}, "
                 f"{verdict(x, goal)}.** "
                 f"Throughput ratio volley / wrk: {1 / med(thr):.2f} (range {rng([1 / t for t in thr])}).")
        L.append("")
    if "ka-epoll" in cells:
        e = paired_ratio("ka-volley", "ka-epoll")
        w = paired_ratio("ka-epoll", "ka-wrk")
        L.append(f"io_uring ÷ epoll in requests per client CPU-second: **{med(e):.2f}** (range {rng(e)}); "
                 f"volley --io epoll ÷ wrk: {med(w):.2f} (range {rng(w)}), the epoll floor (≥ 1.10 before io_uring).")
        L.append("")
    if "ka-baseline" in cells:
        b = paired_ratio("ka-volley", "ka-baseline")
        L.append(f"**This build ÷ {tool_of('ka-baseline')} in requests per client CPU-second: {med(b):.3f} "
                 f"(range {rng(b)}), target ≥ 0.98: {verdict(med(b), 0.98)}.** Baseline: "
                 f"{E.get('BASELINE_VERSION', '')}.")
        L.append("")
    L += raw_table(cells)
    SECTIONS["keepalive"] = L
    SUMMARY["keepalive"] = summ

if "pipeline" in TABLES:
    cells = [c for c in ("pipe-volley", "pipe-epoll", "pipe-h2load") if runs_of(c)]
    L = header_lines(cells)
    L.append(f"HTTP/1.1 pipelining, {E['PIPELINE']} requests in flight on each of {E['CONNECTIONS']} connections, "
             f"one client thread. Medians of {reps} runs.")
    L.append("")
    L.append("| tool | req/s | CPU-s per million requests | p50 | p99 | mean |")
    L.append("|---|---:|---:|---:|---:|---:|")
    summ = {}
    for c in cells:
        rs = runs_of(c)
        s = {k: medof(rs, k) for k in ("rps", "cpu_per_m", "p50", "p99", "mean")}
        summ[label(c)] = s
        L.append(f"| {label(c)} | {s['rps']:,.0f} | {s['cpu_per_m']:.2f} | {us(s['p50'])} | {us(s['p99'])} | {us(s['mean'])} |")
    ratio = paired_ratio("pipe-volley", "pipe-h2load")
    L += ["", f"**Target volley ≥ 1.3× h2load in requests per client CPU-second: {med(ratio):.2f} "
          f"(range {rng(ratio)}), {verdict(med(ratio), 1.3)}.**", ""]
    if "pipe-epoll" in cells:
        e = paired_ratio("pipe-epoll", "pipe-h2load")
        L += [f"volley --io epoll ÷ h2load: {med(e):.2f} (range {rng(e)}).", ""]
    L += raw_table(cells)
    SECTIONS["pipeline"] = L
    SUMMARY["pipeline"] = dict(tools=summ, ratio=ratio)

if "close" in TABLES:
    cells = [c for c in ("close-wrk", "close-volley", "close-epoll") if runs_of(c)]
    L = header_lines(cells)
    L.append(f"A new TCP connection per request ({E['CONNECTIONS']} at a time, one client thread): volley "
             "`--no-keepalive` against wrk with a `Connection: close` header (nginx then closes after each "
             "response, so TIME_WAIT lands on the server side). For wrk connections = requests; for volley the "
             "connection count is `connections.opened`. Medians of "
             f"{reps} runs. Local port range {E['PORT_RANGE']}, tcp_tw_reuse={E['TW_REUSE']}, "
             f"tcp_max_tw_buckets={E['TW_MAX']} (unchanged by the script).")
    L.append("")
    L.append("| tool | connections/s | CPU-s per million connections | p50 | p99 | mean |")
    L.append("|---|---:|---:|---:|---:|---:|")
    summ = {}
    for r in RUNS:
        if r["cell"] in cells:
            conns = r["connections"] if r["connections"] is not None else r["requests"]
            r["conns"] = conns
            r["cpu_per_mconn"] = (r["user"] + r["sys"]) / conns * 1e6
            r["cps"] = r["rps"] * conns / r["requests"]
    for c in cells:
        rs = runs_of(c)
        s = {k: medof(rs, k) for k in ("cps", "cpu_per_mconn", "p50", "p99", "mean")}
        summ[label(c)] = s
        L.append(f"| {label(c)} | {s['cps']:,.0f} | {s['cpu_per_mconn']:.2f} | {us(s['p50'])} | {us(s['p99'])} | {us(s['mean'])} |")
    ratio = paired_ratio("close-volley", "close-wrk", "cpu_per_mconn")
    L += ["", f"**Target volley ≥ 1.0× wrk in connections per client CPU-second: {med(ratio):.2f} "
          f"(range {rng(ratio)}), {verdict(med(ratio), 1.0)}.**", ""]
    if "close-epoll" in cells:
        e = paired_ratio("close-epoll", "close-wrk", "cpu_per_mconn")
        L += [f"volley --io epoll ÷ wrk: {med(e):.2f} (range {rng(e)}).", ""]
    L += raw_table(cells, conn_col=True)
    SECTIONS["close"] = L
    SUMMARY["close"] = dict(tools=summ, ratio=ratio)

if "openloop" in TABLES:
    cells = ["open-fast", "open-slow"]
    L = header_lines(cells)
    fast, slow = int(E["OPEN_RATE"]), int(E["SLOW_RATE"])
    L.append(f"Open loop (`-R`), {E['CONNECTIONS']} connections, one thread, uniform arrivals. Achieved rate = "
             "`requests.completed / elapsed_s`; schedule lag = how late requests were written compared with their "
             "due time (`schedule_lag_us`); corrected latency (`latency_us`, from the due time) against service time "
             "(`service_time_us`, from the write). Every run:")
    L.append("")
    L.append("| # | rep | target req/s | achieved req/s | off by | lag p50 | lag p99 | corrected p50 | service p50 | "
             "corrected − service p50 | corrected p99 | service p99 | CPU-s | notes |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in sorted((r for r in RUNS if r["cell"] in cells), key=lambda r: r["seq"]):
        d = r["json"]
        target = d["load"]["rate_rps"]
        r["achieved"] = d["requests"]["completed"] / d["elapsed_s"]
        r["off_pct"] = 100 * (r["achieved"] - target) / target
        lag = d.get("schedule_lag_us") or {}
        r["lag_p50"], r["lag_p99"] = lag.get("p50"), lag.get("p99")
        r["svc_p50"], r["svc_p99"] = d["service_time_us"]["p50"], d["service_time_us"]["p99"]
        r["p50_gap"] = r["p50"] - r["svc_p50"]
        L.append(f"| {r['seq']} | {r['rep']} | {target:,.0f} | {r['achieved']:,.1f} | {r['off_pct']:+.2f} % | "
                 f"{us(r['lag_p50'])} | {us(r['lag_p99'])} | {us(r['p50'])} | {us(r['svc_p50'])} | {r['p50_gap']:,.0f} µs | "
                 f"{us(r['p99'])} | {us(r['svc_p99'])} | {r['user'] + r['sys']:.2f} | {'; '.join(r['notes'])} |")
    F, S = runs_of("open-fast"), runs_of("open-slow")
    off = med([abs(r["off_pct"]) for r in F])
    gap = med([abs(r["p50_gap"]) for r in S])
    L += ["", f"**Target: at {fast:,} req/s the achieved rate is within 1 % of the target: median |off| "
          f"{off:.2f} %, {'met' if off <= 1 else 'NOT met'}** (worst {max(abs(r['off_pct']) for r in F):.2f} %); "
          f"schedule lag p50 {us(medof(F, 'lag_p50'))}, p99 {us(medof(F, 'lag_p99'))} (medians).",
          "",
          f"**Target: at {slow:,} req/s the corrected p50 is within 0.1 ms of the service-time p50: median gap "
          f"{gap:.0f} µs, {'met' if gap <= 100 else 'NOT met'}** (worst {max(abs(r['p50_gap']) for r in S):.0f} µs; "
          f"corrected p50 {us(medof(S, 'p50'))} vs service p50 {us(medof(S, 'svc_p50'))}, schedule lag p50 "
          f"{us(medof(S, 'lag_p50'))}, p99 {us(medof(S, 'lag_p99'))}).", ""]
    L += raw_table(cells)
    SECTIONS["openloop"] = L
    SUMMARY["openloop"] = dict(fast_off_pct=[r["off_pct"] for r in F], slow_gap_us=[r["p50_gap"] for r in S])


# ---------------------------------------------------------------- syscalls
def parse_strace(path):
    rows = {}
    for line in read(path).splitlines():
        t = line.split()
        if len(t) >= 5 and re.match(r"^[\d.]+$", t[0]) and t[-1] != "total":
            rows[t[-1]] = int(t[3])
    return rows


def parse_perf(path):
    rows, total = {}, None
    for line in read(path).splitlines():
        if not line or line.startswith("#"):
            continue
        f = line.split(",")
        if len(f) < 3 or not f[0].strip().isdigit():
            continue
        n, ev = int(f[0]), f[2]
        if ev == "raw_syscalls:sys_enter":
            total = n
        elif ev.startswith("syscalls:sys_enter_"):
            rows[ev[len("syscalls:sys_enter_"):]] = n
    return rows, total


def requests_of(tool, base):
    return PARSE["volley" if tool == "epoll" else tool](base)["requests"]


if "syscalls" in TABLES:
    tools = [t for t in ("volley", "epoll", "wrk", "h2load", "oha") if os.path.exists(os.path.join(out_dir, f"sys-{t}-strace.strace"))]
    data = {}
    for t in tools:
        b = os.path.join(out_dir, f"sys-{t}-strace")
        st = parse_strace(b + ".strace")
        n = requests_of(t, b)
        entry = dict(strace=st, strace_requests=n)
        pb = os.path.join(out_dir, f"sys-{t}-perf")
        if os.path.exists(pb + ".perf"):
            pr, ptot = parse_perf(pb + ".perf")
            entry.update(perf=pr, perf_total=ptot, perf_requests=requests_of(t, pb))
        data[t] = entry
    L = [f"Run {E['DATE']} by `bench/compare.sh`; raw outputs were in `{os.path.relpath(out_dir, ROOT)}/`. "
         f"Machine and versions as in the keep-alive table; {E['STRACE_VERSION']}"
         + (f", {E['PERF_VERSION']}" if E.get("PERF_VERSION") else "") + ".", ""]
    L.append(f"Keep-alive case ({E['CONNECTIONS']} connections, one client thread, GET), each client run once for "
             f"{E['SYSCALL_DURATION']}. **strace** (`strace -c -f`, every thread, start-up included) stops the client "
             "at every syscall, so the client runs many times slower and each `epoll_wait` finds more ready "
             "sockets than at full speed: it shows which calls a request costs, but under-counts the waits. "
             "**perf** counts the same syscalls with kernel tracepoints (`perf stat -e syscalls:sys_enter_*`) "
             "while the client runs at full speed; its numbers are the real per-request cost. Each count is "
             "divided by the requests that run completed.")
    L.append("")
    L.append("```sh")
    for t in tools:
        L.append(COMMANDS.get(f"sys-{t}-strace", ""))
    if any("perf" in data[t] for t in tools):
        for t in tools:
            L.append(COMMANDS.get(f"sys-{t}-perf", ""))
    L += ["```", ""]
    # rows: syscalls that cost at least 0.001 per request for some tool
    names = set()
    for t in tools:
        d = data[t]
        names |= {k for k, v in d["strace"].items() if v / d["strace_requests"] >= 0.001}
        if "perf" in d:
            names |= {k for k, v in d["perf"].items() if v / d["perf_requests"] >= 0.001}

    def cell(t, k, src):
        d = data[t]
        if src == "strace":
            v = d["strace"].get(k, 0)
            return f"{v / d['strace_requests']:.3f}"
        if "perf" not in d:
            return "—"
        v = d["perf"].get(k)
        return "—" if v is None else f"{v / d['perf_requests']:.3f}"

    has_perf = any("perf" in data[t] for t in tools)
    shown = {"volley": f"volley --io {E.get('VOLLEY_IO_MAIN', 'uring')}", "epoll": "volley --io epoll"}
    head = "| syscall |" + "".join(f" {shown.get(t, t)} strace |" + (f" {shown.get(t, t)} perf |" if has_perf else "") for t in tools)
    L.append("Syscalls per completed request:")
    L.append("")
    L.append(head)
    L.append("|---|" + "---:|" * (len(tools) * (2 if has_perf else 1)))

    def total_perf_key(t):
        return sum(v for v in data[t].get("perf", {}).values())

    order = sorted(names, key=lambda k: -max(data[t]["strace"].get(k, 0) / data[t]["strace_requests"] for t in tools))
    for k in order:
        L.append(f"| `{k}` |" + "".join(f" {cell(t, k, 'strace')} |" + (f" {cell(t, k, 'perf')} |" if has_perf else "")
                                       for t in tools))
    row = "| **all syscalls** |"
    for t in tools:
        d = data[t]
        row += f" **{sum(d['strace'].values()) / d['strace_requests']:.3f}** |"
        if has_perf:
            row += (f" **{d['perf_total'] / d['perf_requests']:.3f}** |" if d.get("perf_total") else " — |")
    L.append(row)
    row = "| requests in the run |"
    for t in tools:
        d = data[t]
        row += f" {d['strace_requests']:,} |" + (f" {d.get('perf_requests', 0):,} |" if has_perf else "")
    L.append(row)
    L.append("")
    L.append("Rows: every syscall that cost at least 0.001 per request for some tool; \"all syscalls\" counts "
             "every call including start-up and the rare ones not listed.")
    SECTIONS["syscalls"] = L
    SUMMARY["syscalls"] = data

# ---------------------------------------------------------------- output
for name in ("keepalive", "pipeline", "close", "openloop", "syscalls"):
    if name in SECTIONS:
        print(f"\n===== {name} =====\n")
        print("\n".join(SECTIONS[name]))

json.dump(dict(summary=SUMMARY, runs=[{k: v for k, v in r.items() if k != "json"} for r in RUNS]),
          open(os.path.join(out_dir, "summary.json"), "w"), indent=2, default=str)

if UPDATE_MD != "0":
    text = open(BENCH_MD).read() if os.path.exists(BENCH_MD) else "# Benchmarks\n"
    for name in ("keepalive", "pipeline", "close", "openloop", "syscalls"):
        if name not in SECTIONS:
            continue
        begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
        section = f"{begin}\n" + "\n".join(SECTIONS[name]).rstrip("\n") + f"\n{end}"
        if begin in text and end in text and text.index(begin) < text.index(end):
            text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
        else:
            text = text.rstrip("\n") + "\n\n" + section + "\n"
    tmp = BENCH_MD + ".tmp"
    open(tmp, "w").write(text)
    os.replace(tmp, BENCH_MD)
    print(f"\n[compare] rewrote the {', '.join(n for n in SECTIONS)} section(s) of {BENCH_MD}", file=sys.stderr)
