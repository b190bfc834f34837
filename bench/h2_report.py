"""bench/h2_report.py: renders the raw outputs of bench/h2.sh (OUT_DIR) as Markdown and
rewrites the h2-* sections of BENCH_MD (unless UPDATE_MD=0). Run by bench/h2.sh."""
import json
import os
import re
import statistics
import sys

OUT = os.environ["OUT_DIR"]
BENCH_MD = os.environ["BENCH_MD"]
UPDATE_MD = os.environ.get("UPDATE_MD", "1")
ROOT = os.environ.get("ROOT", ".")
META = json.load(open(os.path.join(OUT, "meta.json")))
REPS = int(META["REPS"])
COMMANDS = dict(l.rstrip("\n").split("\t", 1) for l in open(os.path.join(OUT, "commands.tsv")) if "\t" in l)
RUNS = [l.split("\t") for l in open(os.path.join(OUT, "runs.tsv")).read().splitlines() if l]
ORDER = {(r[2], int(r[1])): (int(r[0]), int(r[3])) for r in RUNS}
SERVERS = META["SERVERS"].split()
PROTOS = META["PROTOS"].split()
TOOLS = META["TOOLS"].split()
H2 = ("h2", "h2c", "HTTP/2", "http/2", "HTTP/2.0")


def fail(msg):
    print(f"[h2] error: {msg}", file=sys.stderr)
    sys.exit(1)


def base(cell, rep):
    return os.path.join(OUT, f"{cell}-rep{rep}")


def tool_of(cell):
    return "h2load" if "h2load" in cell else "oha" if "oha" in cell else "volley"


def parse(cell, rep):
    b = base(cell, rep)
    u, s, e, m = open(b + ".time").read().split()[-4:]
    r = dict(cell=cell, rep=rep, user=float(u), sys=float(s), wall=float(e), maxrss_kib=int(m), tool=tool_of(cell))
    r["cpu"] = r["user"] + r["sys"]
    r["seq"], r["attempts"] = ORDER.get((cell, rep), (0, 1))
    t = [int(x) for x in open(b + ".ticks").read().split()]
    hz = os.sysconf("SC_CLK_TCK")
    ncpu = int(META["NCPU"])
    r["server_pct"] = 100 * (t[7] - t[3]) / hz / max(r["wall"], 1e-9)
    wall_t = (t[5] - t[1]) / hz / ncpu
    other = ((t[4] - t[0]) - (t[6] - t[2])) / hz - r["cpu"]
    r["other_pct"] = max(0, 100 * other / wall_t) if wall_t > 0 else 0
    r["busy_before"] = open(b + ".busy").read().strip()
    r["notes"] = []
    if os.path.exists(b + ".access"):
        acc = {}
        for line in open(b + ".access"):
            n, proto, status = line.split()
            acc[(proto, status)] = int(n)
        r["log_lines"] = sum(acc.values())
        r["log_kinds"] = sorted(f"{k[0]} {k[1]}: {v:,}" for k, v in acc.items())
    if r["tool"] == "volley":
        d = json.load(open(b + ".json"))
        r["json"] = d
        q = d["requests"]
        r["requests"] = q["completed"]
        r["ok"] = sum(v for k, v in (d.get("status_codes") or {}).items() if str(k).startswith("2"))
        r["errors"] = q["errors"]
        r["connections"] = d["connections"]["opened"]
        r["rps"] = d["throughput_rps"]
        lat = d.get("latency_us") or {}
        r["p50"], r["p99"], r["mean"] = lat.get("p50"), lat.get("p99"), lat.get("mean")
        r["rss"] = d["client"].get("rss_max_bytes")
        r["protocol"] = (d.get("target") or {}).get("protocol")
        if r["errors"]:
            r["notes"].append("errors " + ", ".join(f"{k} {v}" for k, v in d["errors"].items() if v))
        if q.get("unfinished"):
            r["notes"].append(f"unfinished {q['unfinished']}")
        if d["client"].get("saturated"):
            r["notes"].append("volley flags client saturated")
    elif r["tool"] == "h2load":
        text = open(b + ".out").read()
        m = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", text)
        if not m:
            fail(f"cannot parse h2load output {b}.out")
        total, started, done, ok, failed, errored, timeout = map(int, m.groups())
        r["requests"] = ok
        r["ok"] = ok
        r["errors"] = failed + errored + timeout
        r["rps"] = ok / r["wall"]
        lat = re.search(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)", text)
        r["mean"] = lat_us(lat.group(3)) if lat else None
        r["p50"] = r["p99"] = None
        r["protocol"] = (re.search(r"Application protocol: (\S+)", text) or [None, "h2c"])[1]
        if r["errors"]:
            r["notes"].append(f"failed {failed}, errored {errored}, timeout {timeout}")
        if started > done:
            r["notes"].append(f"unfinished {started - done}")
    else:
        d = json.load(open(b + ".out"))
        codes = d.get("statusCodeDistribution") or {}
        r["requests"] = sum(codes.values())
        r["ok"] = sum(v for k, v in codes.items() if k.startswith("2"))
        errs = d.get("errorDistribution") or {}
        r["errors"] = sum(v for k, v in errs.items() if "deadline" not in k)
        r["rps"] = r["requests"] / r["wall"]
        p = d.get("latencyPercentiles") or {}
        r["p50"] = p.get("p50") * 1e6 if p.get("p50") is not None else None
        r["p99"] = p.get("p99") * 1e6 if p.get("p99") is not None else None
        r["mean"] = (d.get("summary") or {}).get("average")
        r["mean"] = r["mean"] * 1e6 if r["mean"] is not None else None
        r["protocol"] = "h2"
        if errs:
            r["notes"].append(", ".join(f"{k} {v}" for k, v in errs.items()))
    if os.path.exists(b + ".rc") and open(b + ".rc").read().strip() not in ("", "0"):
        r["notes"].insert(0, f"exit code {open(b + '.rc').read().strip()}")
    if r.get("attempts", 1) > 1:
        r["notes"].insert(0, f"attempt {r['attempts']}")
    r["rpcpu"] = r["requests"] / r["cpu"] if r["cpu"] > 0 else float("nan")
    return r


def lat_us(s):
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", s)
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)] if m else None


_RUNS = {}


def runs(cell):
    if cell not in _RUNS:
        _RUNS[cell] = [parse(cell, rep) for rep in range(1, REPS + 1) if os.path.exists(base(cell, rep) + ".time")]
    return _RUNS[cell]


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def rng(xs):
    return f"{min(xs):.2f}–{max(xs):.2f}"


def us(v):
    if v is None:
        return "—"
    return f"{v / 1000:,.2f} ms" if v >= 10_000 else f"{v:,.0f} µs"


def mib(b):
    return "—" if b is None else f"{b / 1048576:.1f} MiB"


def verdict(x, target):
    return "met" if x >= target else "**not met**"


def header(cells, servers=("nginx", "h2o")):
    lines = [f"Run {META['DATE']} (started {META['STARTED']}) by `bench/h2.sh` (REPS={META['REPS']}, DURATION={META['DURATION']}, "
             f"CONNECTIONS={META['CONNECTIONS']}, STREAMS={META['STREAMS']}); raw outputs were in `{os.path.relpath(OUT, ROOT)}/`.", "",
             f"- Machine: {META['CPU_MODEL']}, {META['NCPU']} CPUs, {META['KERNEL']}; servers on CPU {META['SERVER_CPU']}, "
             f"clients on CPU {META['CLIENT_CPU']}; shared with other work (see the \"other CPU\" column)",
             f"- Versions: {META['VOLLEY_VERSION']} with rustls {META['RUSTLS_VERSION']} · {META['H2LOAD_VERSION']} "
             f"({META['H2LOAD_OPENSSL']}) · {META['OHA_VERSION']} · {META['NGINX_VERSION']} ({META['NGINX_OPENSSL']}) · "
             f"{META['H2O_VERSION']} ({META['H2O_OPENSSL']}) · openssl CLI {META['OPENSSL_VERSION']}", "", "```sh"]
    if "nginx" in servers:
        lines.append(META["CMD_NGINX"])
    if "h2o" in servers and META.get("CMD_H2O"):
        lines.append(META["CMD_H2O"])
    lines += [COMMANDS[c] for c in cells if c in COMMANDS]
    lines += ["# " + META["CMD_VOLLEY_NOTE"], "```", ""]
    return lines


def notes(r):
    return "; ".join(r["notes"])


PNAME = {"tls": "h2 over TLS", "h2c": "h2c"}
SECTIONS = {}
TABLES = META["TABLES"].split()

# ------------------------------------------------------------------ throughput
if "h2-throughput" in TABLES:
    cells = [f"tp-{s}-{p}-{t}" for s in SERVERS for p in PROTOS for t in TOOLS]
    L = header(cells)
    L += [f"{META['CONNECTIONS']} connections × {META['STREAMS']} concurrent streams, one client thread, GET `/` "
          f"(nginx: `return 200 '.'`; h2o: a 1-byte file), closed loop, {META['DURATION']} per run. "
          "Requests = responses the tool counted as completed (volley `requests.completed`, h2load `succeeded`, "
          "oha the sum of `statusCodeDistribution`); client CPU = user + sys from `/usr/bin/time`. "
          f"Medians of {REPS} runs:", "",
          "| server | protocol | tool | req/s | requests per client CPU-s | client CPU-s per M req | mean latency | p99 | server CPU |",
          "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    ratios = {}
    for s in SERVERS:
        for p in PROTOS:
            R = {t: runs(f"tp-{s}-{p}-{t}") for t in TOOLS}
            for t in TOOLS:
                rs = R[t]
                if rs:
                    L.append(f"| {s} | {PNAME[p]} | {t} | {med([r['rps'] for r in rs]):,.0f} | {med([r['rpcpu'] for r in rs]):,.0f} | "
                             f"{med([1e6 / r['rpcpu'] for r in rs]):.2f} | {us(med([r['mean'] for r in rs]))} | "
                             f"{us(med([r['p99'] for r in rs]))} | {med([r['server_pct'] for r in rs]):.0f} % |")
            for peer in ("h2load", "oha"):
                if "volley" in R and peer in R:
                    xs = [a["rpcpu"] / b["rpcpu"] for a in R["volley"] for b in R[peer] if a["rep"] == b["rep"]]
                    if xs:
                        ratios[(s, p, peer)] = xs
    L.append("")
    if ratios:
        L += ["Requests per client CPU-second, volley ÷ peer, per repetition (the runs of one repetition are "
              "back to back); targets: ≥ 1.0× h2load, ≥ 2× oha:", "",
              "| server | protocol | volley ÷ h2load | range | target ≥ 1.0 | volley ÷ oha | range | target ≥ 2 |",
              "|---|---|---:|---|---|---:|---|---|"]
        for s in SERVERS:
            for p in PROTOS:
                h, o = ratios.get((s, p, "h2load")), ratios.get((s, p, "oha"))
                L.append(f"| {s} | {PNAME[p]} | {f'{med(h):.2f}' if h else '—'} | {rng(h) if h else '—'} | "
                         f"{verdict(med(h), 1.0) if h else '—'} | {f'{med(o):.2f}' if o else '—'} | {rng(o) if o else '—'} | "
                         f"{verdict(med(o), 2.0) if o else '—'} |")
        L.append("")
    rs = sorted((r for c in cells for r in runs(c)), key=lambda r: r["seq"])
    L += ["All runs, in the order they ran (# = position in the whole session):", "",
          "| # | rep | server | protocol | tool | requests | req/s | user s | sys s | req per CPU-s | mean | p99 | max RSS | server CPU | other CPU | notes |",
          "|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rs:
        _, s, p, t = r["cell"].split("-")
        L.append(f"| {r['seq']} | {r['rep']} | {s} | {PNAME[p]} | {t} | {r['requests']:,} | {r['rps']:,.0f} | {r['user']:.2f} | "
                 f"{r['sys']:.2f} | {r['rpcpu']:,.0f} | {us(r['mean'])} | {us(r['p99'])} | {r['maxrss_kib'] / 1024:.1f} MiB | "
                 f"{r['server_pct']:.0f} % | {r['other_pct']:.0f} % | {notes(r)} |")
    SECTIONS["h2-throughput"] = L

# ------------------------------------------------------------------ correctness


def h2_bits(d, path=""):
    """Every JSON value whose key path mentions h2, streams or settings (what volley reports
    about the connection's HTTP/2 state)."""
    out = []
    if isinstance(d, dict):
        for k, v in d.items():
            p = f"{path}.{k}" if path else k
            if re.search(r"h2|http2|stream|setting|concurren|goaway|protocol", k, re.I) and not isinstance(v, (dict, list)):
                out.append((p, v))
            elif isinstance(v, dict):
                if re.search(r"h2|http2", k, re.I):
                    out += [(f"{p}.{kk}", vv) for kk, vv in v.items() if not isinstance(vv, (dict, list))]
                out += h2_bits(v, p)
    return out


if "h2-correct" in TABLES and "volley" in TOOLS:
    counts = [f"count-{s}-{p}" for s in SERVERS for p in PROTOS]
    stalls = ["stall-h1", "stall-h2c", "stall-h2c-mux"]
    L = header(counts + ["maxstreams"] + stalls)
    L += [f"Requests counted by both sides: the server's own access log (the lines each run added; nginx logs "
          f"`$server_protocol $status`, h2o `%H %s`) against volley's `requests` of the same run, "
          f"{META['CONNECTIONS']} connections × {META['STREAMS']} streams, {META['COUNT_DURATION']} without warm-up:", "",
          "| server | protocol | log lines | logged as | volley sent | completed | unfinished (in flight at the end) | errors | completed = log? | completed + unfinished = log? |",
          "|---|---|---:|---|---:|---:|---:|---:|---|---|"]
    for c in counts:
        for r in runs(c):
            q = r["json"]["requests"]
            _, s, p = c.split("-")
            d1 = r["log_lines"] - q["completed"]
            d2 = d1 - q["unfinished"]
            L.append(f"| {s} | {PNAME[p]} | {r['log_lines']:,} | {', '.join(r['log_kinds'])} | {q['sent']:,} | {q['completed']:,} | "
                     f"{q['unfinished']:,} | {q['errors']:,} | {'yes' if d1 == 0 else '**no** (log %+d)' % d1} | "
                     f"{'yes' if d2 == 0 else '**no** (log %+d)' % d2} |")
    ms = runs("maxstreams")
    if ms:
        r = ms[0]
        d = r["json"]
        L += ["", f"Against an nginx h2c listener with `http2_max_concurrent_streams {META['MAXSTREAMS']};`, volley asked for "
              f"`--streams {META['STREAMS']}` on {META['CONNECTIONS']} connections ({META['COUNT_DURATION']}): "
              f"{d['requests']['completed']:,} completed, {d['requests']['errors']:,} errors, {r['rps']:,.0f} req/s. "
              "What volley's JSON says about HTTP/2 and streams:", "", "| JSON key | value |", "|---|---|"]
        bits = list(dict.fromkeys(h2_bits(d)))  # a key can be found twice (an h2 dict's and by name)
        for k, v in bits:
            L.append(f"| `{k}` | `{json.dumps(v)}` |")
        if not bits:
            L.append("| (none) | volley's JSON has no key about streams or HTTP/2 settings |")
        warn = d.get("warnings") or []
        if warn:
            L += ["", "volley's warnings for this run:", ""] + [f"- {w if isinstance(w, str) else json.dumps(w)}" for w in warn]
    L += ["", f"Open loop at {META['STALL_RATE']} req/s, 10 s, against nginx whose worker is stopped (SIGSTOP) for "
          f"{META['STALL_MS']} ms at 2 s and again at 7 s after the client starts (the stall of bench/tls.sh); HTTP/1.1 with "
          f"{META['STALL_CONNECTIONS']} connections, h2c with {META['STALL_CONNECTIONS']} connections × 1 stream (the same "
          f"requests in flight), and h2c with {META['CONNECTIONS']} connections × {META['STREAMS']} streams, interleaved. "
          "The corrected latency (from each request's due time) must show the stalls the same way over each:", "",
          "| rep | run | completed | errors | corrected p50 | p90 | p99 | max | service p50 | service p99 | schedule lag p99 |",
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    LBL = {"stall-h1": "HTTP/1.1", "stall-h2c": "h2c, 1 stream/conn",
           "stall-h2c-mux": f"h2c, {META['CONNECTIONS']} × {META['STREAMS']}"}
    S = {c: runs(c) for c in stalls}
    for r in sorted((r for c in stalls for r in S[c]), key=lambda r: r["seq"]):
        d = r["json"]
        lat, svc, lag = d["latency_us"], d.get("service_time_us") or {}, d.get("schedule_lag_us") or {}
        L.append(f"| {r['rep']} | {LBL[r['cell']]} | {d['requests']['completed']:,} | {d['requests']['errors']:,} | {us(lat.get('p50'))} | "
                 f"{us(lat.get('p90'))} | {us(lat.get('p99'))} | {us(lat.get('max'))} | {us(svc.get('p50'))} | {us(svc.get('p99'))} | "
                 f"{us(lag.get('p99'))} |")
    if S["stall-h1"]:
        L.append("")
        for c in ("stall-h2c", "stall-h2c-mux"):
            if not S[c]:
                continue
            parts = []
            for k in ("p50", "p90", "p99"):
                a = med([r["json"]["latency_us"][k] for r in S[c]])
                b = med([r["json"]["latency_us"][k] for r in S["stall-h1"]])
                parts.append(f"{k} {us(a)} vs {us(b)} ({'+' if a >= b else '−'}{us(abs(a - b))})")
            L.append(f"- {LBL[c]} vs HTTP/1.1, corrected (medians): " + "; ".join(parts))
    SECTIONS["h2-correct"] = L

# ------------------------------------------------------------------ memory
if "h2-memory" in TABLES:
    ns = sorted(int(n) for n in META["MEM_CONNS"].split())
    cells = [f"mem-{t}-{n}" for n in ns for t in ("volley", "h2load") if t in TOOLS]
    L = header(cells, servers=("nginx",))
    L += [f"Closed loop with N h2c connections × {META['MEM_STREAMS']} concurrent streams against nginx, one client thread, "
          f"{META['MEM_DURATION']}. Client RSS: `/usr/bin/time`'s max RSS (getrusage ru_maxrss, the same as VmHWM in "
          "/proc/PID/status at exit) for every tool, and volley's own `client.rss_max_bytes`:", "",
          "| tool | connections | streams each | opened | requests | req/s | errors | `client.rss_max_bytes` | max RSS | notes |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for c in cells:
        for r in runs(c):
            n = int(c.split("-")[2])
            L.append(f"| {r['tool']} | {n:,} | {META['MEM_STREAMS']} | {r.get('connections') if r.get('connections') is not None else '—'} | "
                     f"{r['requests']:,} | {r['rps']:,.0f} | {r['errors']:,} | {mib(r.get('rss'))} | {r['maxrss_kib'] / 1024:.1f} MiB | {notes(r)} |")
    vs = runs(f"mem-volley-{ns[-1]}") if "volley" in TOOLS else []
    if vs:
        rss = max(r["maxrss_kib"] * 1024 for r in vs)
        L += ["", f"**Target volley's RSS ≤ 128 MiB with {ns[-1]:,} h2 connections × {META['MEM_STREAMS']} streams: "
              f"{mib(rss)}, {'met' if rss <= 128 * 1048576 else '**not met**'}.**"]
    SECTIONS["h2-memory"] = L

for name, lines in SECTIONS.items():
    print(f"\n### {name}\n")
    print("\n".join(lines))

if UPDATE_MD != "0" and SECTIONS:
    text = open(BENCH_MD).read() if os.path.exists(BENCH_MD) else "## HTTP/2 (`bench/h2.sh`) — draft\n"
    for name in ("h2-throughput", "h2-correct", "h2-memory"):
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
    print(f"\n[h2] rewrote the {', '.join(SECTIONS)} section(s) of {BENCH_MD}", file=sys.stderr)
