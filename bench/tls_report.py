"""bench/tls_report.py: renders the raw outputs of bench/tls.sh (OUT_DIR) as Markdown and
rewrites the tls-* sections of BENCH_MD (unless UPDATE_MD=0). Run by bench/tls.sh."""
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
CLIENT_CPU = META["CLIENT_CPU"]
COMMANDS = dict(l.rstrip("\n").split("\t", 1) for l in open(os.path.join(OUT, "commands.tsv")))
RUNS = [l.split("\t") for l in open(os.path.join(OUT, "runs.tsv")).read().splitlines() if l]
ORDER = {(r[2], int(r[1])): (int(r[0]), int(r[3])) for r in RUNS}


def fail(msg):
    print(f"[tls] error: {msg}", file=sys.stderr)
    sys.exit(1)


def to_us(v, unit):
    return float(v) * {"us": 1, "ms": 1e3, "s": 1e6, "m": 60e6}[unit]


def lat_us(s):
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", s)
    return to_us(m.group(1), m.group(2)) if m else None


def base(cell, rep):
    return os.path.join(OUT, f"{cell}-rep{rep}")


def parse(cell, rep):
    b = base(cell, rep)
    u, s, e, m = open(b + ".time").read().split()[-4:]
    r = dict(cell=cell, rep=rep, user=float(u), sys=float(s), wall=float(e), maxrss_kib=int(m))
    r["cpu"] = r["user"] + r["sys"]
    r["seq"], r["attempts"] = ORDER.get((cell, rep), (0, 1))
    t = open(b + ".ticks").read().split()
    hz = os.sysconf("SC_CLK_TCK")
    r["nginx_pct"] = 100 * (int(t[5]) - int(t[2])) / hz / max(r["wall"], 1e-9)
    ncpu = int(META["NCPU"])
    wall_t = (int(t[4]) - int(t[1])) / hz / ncpu
    other = ((int(t[3]) - int(t[0])) - (int(t[5]) - int(t[2]))) / hz - r["cpu"]
    r["other_pct"] = max(0, 100 * other / wall_t) if wall_t > 0 else 0
    r["busy_before"] = open(b + ".busy").read().strip()
    if os.path.exists(b + ".access"):
        acc = {}
        for line in open(b + ".access"):
            n, proto, cipher, reused, status = line.split()
            acc[(proto, cipher, reused, status)] = int(n)
        r["log_lines"] = sum(acc.values())
        r["log_resumed"] = sum(v for k, v in acc.items() if k[2] == "r")
        r["log_protos"] = sorted({f"{k[0]} {k[1]}" for k in acc})
        r["log_statuses"] = sorted({k[3] for k in acc})
    if os.path.exists(b + ".json"):
        d = json.load(open(b + ".json"))
        r["json"] = d
        r["requests"] = d["requests"]["completed"]
        r["connections"] = d["connections"]["opened"]
        r["rps"] = d["throughput_rps"]
        r["p50"], r["p99"] = d["latency_us"]["p50"], d["latency_us"]["p99"]
        tls = (d.get("target") or {}).get("tls")
        r["tls"] = tls
        r["errors"] = d["requests"]["errors"]
        r["rss"] = d["client"].get("rss_max_bytes")
        r["self_cpu"] = (d["client"].get("cpu_user_s") or 0) + (d["client"].get("cpu_sys_s") or 0)
        r["saturated"] = d["client"].get("saturated")
    else:
        text = open(b + ".out").read()
        m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m),", text)
        rr = re.search(r"Requests/sec:\s*([\d.]+)", text)
        lat = dict(re.findall(r"^\s*(50|99)%\s+([\d.]+\w+)", text, re.M))
        if not (m and rr and "50" in lat):
            fail(f"cannot parse wrk output {b}.out")
        r["requests"] = int(m.group(1))
        r["rps"] = float(rr.group(1))
        r["p50"], r["p99"] = lat_us(lat["50"]), lat_us(lat["99"])
        r["connections"] = None
        r["errors"] = 0
        se = re.search(r"Socket errors: (.*)", text)
        r["notes_wrk"] = [l.strip() for l in text.splitlines() if re.search(r"Socket errors|Non-2xx", l)]
        r["tls"] = None
    return r


_RUNS = {}


def runs(cell):  # parsed once, so the tables can annotate the same dicts
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


def header(cells):
    lines = [f"Run {META['DATE']} by `bench/tls.sh` (REPS={META['REPS']}, DURATION={META['DURATION']}, "
             f"CONNECTIONS={META['CONNECTIONS']}); raw outputs were in `{os.path.relpath(OUT, ROOT)}/`.", "",
             f"- Machine: {META['CPU_MODEL']}, {META['NCPU']} CPUs, {META['KERNEL']}; nginx on CPU {META['SERVER_CPU']}, "
             f"clients on CPU {CLIENT_CPU}; shared with other work (see the \"other CPU\" column)",
             f"- Versions: {META['VOLLEY_VERSION']} with rustls {META['RUSTLS_VERSION']} (ring {META['RING_VERSION']}) · "
             f"{META['WRK_VERSION']} ({META['WRK_OPENSSL']}) · {META['NGINX_VERSION']} ({META['NGINX_OPENSSL']}) · "
             f"openssl CLI {META['OPENSSL_VERSION']}", "", "```sh", META["CMD_NGINX"]]
    lines += [COMMANDS[c] for c in cells if c in COMMANDS]
    lines += ["# " + META["CMD_VOLLEY_NOTE"], "```", ""]
    return lines


LABEL = {
    "ka-wrk": "wrk", "ka-volley": "volley -k", "ka-verify": "volley --cacert (verifies)",
    "close-wrk": "wrk + Connection: close", "close-volley": "volley -k --no-keepalive (resumes)",
    "close-full": "volley -k --no-keepalive --no-tls-resume (full)", "close-plain": "volley --no-keepalive, plain HTTP (floor)",
    "count-ka": "volley -k, keep-alive", "count-close": "volley -k --no-keepalive",
    "stall-https": "HTTPS", "stall-http": "plain HTTP",
}


def notes(r):
    n = []
    if r.get("attempts", 1) > 1:
        n.append(f"attempt {r['attempts']}")
    if r.get("errors"):
        d = r["json"]["errors"]
        n.append(f"errors {r['errors']}: " + ", ".join(f"{k} {v}" for k, v in d.items() if v))
    n += r.get("notes_wrk", [])
    if r.get("saturated"):
        n.append("volley flags client saturated")
    return "; ".join(n)


def raw_table(cells, per="req"):
    rs = sorted((r for c in cells for r in runs(c)), key=lambda r: r["seq"])
    out = ["All runs, in the order they ran (# = position in the whole session):", "",
           f"| # | rep | tool | {per}/s | {per}s | user s | sys s | CPU-s per M {per} | p50 | p99 | max RSS | nginx CPU | other CPU | notes |",
           "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rs:
        out.append(f"| {r['seq']} | {r['rep']} | {LABEL.get(r['cell'], r['cell'])} | {r['units'] / r['wall']:,.0f} | {r['units']:,} | "
                   f"{r['user']:.2f} | {r['sys']:.2f} | {r['cpu_per_m']:.2f} | {us(r['p50'])} | {us(r['p99'])} | "
                   f"{r['maxrss_kib'] / 1024:.1f} MiB | {r['nginx_pct']:.0f} % | {r['other_pct']:.0f} % | {notes(r)} |")
    return out


SECTIONS = {}
TABLES = META["TABLES"].split()

# ------------------------------------------------------------------ keep-alive
if "tls-keepalive" in TABLES:
    cells = ["ka-wrk", "ka-volley", "ka-verify"]
    R = {c: runs(c) for c in cells}
    for c in cells:
        for r in R[c]:
            r["units"] = r["requests"]
            r["cpu_per_m"] = r["cpu"] / r["requests"] * 1e6
    def ratio(a, b):
        xs = []
        for ra in R[a]:
            for rb in R[b]:
                if ra["rep"] == rb["rep"]:
                    xs.append(rb["cpu_per_m"] / ra["cpu_per_m"])
        return xs
    v_w, c_w, c_v = ratio("ka-volley", "ka-wrk"), ratio("ka-verify", "ka-wrk"), ratio("ka-verify", "ka-volley")
    tls = next((r["tls"] for r in R["ka-volley"] if r.get("tls")), None) or {}
    L = header(cells)
    L += [f"{META['CONNECTIONS']} keep-alive TLS connections, one client thread, GET `/` answered by `return 200 '.'`, "
          f"closed loop, {META['DURATION']} per run; volley negotiated {tls.get('version')} {tls.get('cipher')} "
          f"(ALPN {tls.get('alpn')}). Medians of {REPS} runs:", "",
          "| tool | req/s | CPU-s per million requests | p50 | p99 |", "|---|---:|---:|---:|---:|"]
    for c in cells:
        rs = R[c]
        if rs:
            L.append(f"| {LABEL[c]} | {med([r['rps'] for r in rs]):,.0f} | {med([r['cpu_per_m'] for r in rs]):.2f} | "
                     f"{us(med([r['p50'] for r in rs]))} | {us(med([r['p99'] for r in rs]))} |")
    L.append("")
    if v_w:
        L.append(f"**Target volley -k ≥ 1.10× wrk in requests per client CPU-second: {med(v_w):.2f} "
                 f"(range {rng(v_w)} over {len(v_w)} pairs), {verdict(med(v_w), 1.10)}.**")
    if c_w:
        L.append(f"With certificate verification (`--cacert`): {med(c_w):.2f}× wrk (range {rng(c_w)}), "
                 f"{med(c_v):.2f}× volley -k: on keep-alive connections verification is paid once per connection.")
    L += [""] + raw_table(cells)
    SECTIONS["tls-keepalive"] = L

# ------------------------------------------------------------------ handshakes
if "tls-close" in TABLES:
    cells = ["close-wrk", "close-volley", "close-full", "close-plain"]
    R = {c: runs(c) for c in cells}
    for c in cells:
        for r in R[c]:
            # a handshake per request: nginx's log counts them for wrk (which reports no
            # connection count); volley's connections.opened for volley
            r["units"] = r["connections"] if r["connections"] is not None else r.get("log_lines", r["requests"])
            r["cpu_per_m"] = r["cpu"] / r["units"] * 1e6
    pairs = lambda a, b: [(ra, rb) for ra in R[a] for rb in R[b] if ra["rep"] == rb["rep"]]
    v_w = [rb["cpu_per_m"] / ra["cpu_per_m"] for ra, rb in pairs("close-volley", "close-wrk")]
    L = header(cells)
    L += [f"A new TLS connection per request ({META['CONNECTIONS']} at a time, one client thread): nginx closes after each "
          "response. nginx's access log for these runs records `$ssl_protocol $ssl_cipher $ssl_session_reused`; "
          "\"resumed (nginx)\" is the share of the run's log lines with `r`, \"resumed (volley)\" is "
          "`target.tls.resumed_fraction`. Handshakes = connections: volley's `connections.opened`, wrk's "
          f"requests as nginx logged them. Medians of {REPS} runs:", "",
          "| tool | handshakes/s | client CPU µs per handshake | resumed (nginx) | resumed (volley) | TLS (nginx) | p50 | p99 |",
          "|---|---:|---:|---:|---:|---|---:|---:|"]
    for c in cells:
        rs = R[c]
        if not rs:
            continue
        fr = [r["log_resumed"] / r["log_lines"] for r in rs if r.get("log_lines")]
        vf = [r["tls"]["resumed_fraction"] for r in rs if r.get("tls")]
        protos = sorted({p for r in rs for p in r.get("log_protos", [])})
        L.append(f"| {LABEL[c]} | {med([r['units'] / r['wall'] for r in rs]):,.0f} | {med([r['cpu_per_m'] for r in rs]):.1f} | "
                 f"{'%.1f %%' % (100 * med(fr)) if fr else '—'} | {'%.1f %%' % (100 * med(vf)) if vf else '—'} | "
                 f"{', '.join(protos) or '—'} | {us(med([r['p50'] for r in rs]))} | {us(med([r['p99'] for r in rs]))} |")
    L.append("")
    if v_w:
        L.append(f"**Target volley (resuming) ≥ 1.0× wrk in handshakes per client CPU-second: {med(v_w):.2f} "
                 f"(range {rng(v_w)} over {len(v_w)} pairs), {verdict(med(v_w), 1.0)}.**")
    # what each handshake costs the client: per-rep difference to the plain-HTTP floor
    full = [ra["cpu_per_m"] - rb["cpu_per_m"] for ra, rb in pairs("close-full", "close-plain")]
    res = [ra["cpu_per_m"] - rb["cpu_per_m"] for ra, rb in pairs("close-volley", "close-plain")]
    wrk_tls = [ra["cpu_per_m"] - rb["cpu_per_m"] for ra, rb in pairs("close-wrk", "close-plain")]
    if full and res:
        L += ["", "What each handshake costs volley's client (µs of client CPU per connection, minus the same run's "
              "plain-HTTP `--no-keepalive` floor: TCP connect, request, close; medians of the per-repetition differences):", "",
              "| | client CPU µs per connection | of which TLS (above the plain floor) |", "|---|---:|---:|",
              f"| plain HTTP (floor) | {med([r['cpu_per_m'] for r in R['close-plain']]):.1f} | — |",
              f"| TLS, resumed (default) | {med([r['cpu_per_m'] for r in R['close-volley']]):.1f} | {med(res):.1f} |",
              f"| TLS, full handshake (`--no-tls-resume`) | {med([r['cpu_per_m'] for r in R['close-full']]):.1f} | {med(full):.1f} |",
              f"| wrk (for comparison; resumed share as above) | {med([r['cpu_per_m'] for r in R['close-wrk']]):.1f} | {med(wrk_tls):.1f} |"]
    L += [""] + raw_table(cells, per="handshake")
    L += ["", "nginx's access log per run (lines = requests it answered; `r` = resumed session):", "",
          "| # | rep | tool | log lines | resumed | TLS | statuses | volley's handshakes | volley's resumed_fraction |",
          "|---:|---:|---|---:|---:|---|---|---:|---:|"]
    for r in sorted((r for c in cells for r in R[c]), key=lambda r: r["seq"]):
        if r["cell"] == "close-plain":
            continue
        t = r.get("tls") or {}
        L.append(f"| {r['seq']} | {r['rep']} | {LABEL[r['cell']]} | {r.get('log_lines', 0):,} | {r.get('log_resumed', 0):,} | "
                 f"{', '.join(r.get('log_protos', []))} | {', '.join(r.get('log_statuses', []))} | "
                 f"{t.get('handshakes', '—') if t else '—'} | {t.get('resumed_fraction', '—') if t else '—'} |")
    SECTIONS["tls-close"] = L

# ------------------------------------------------------------------ correctness
if "tls-correct" in TABLES:
    cells = ["count-ka", "count-close", "stall-https", "stall-http"]
    L = header(cells)
    L += [f"Requests counted by both sides: nginx's own access log (unbuffered, the lines each run added) against volley's "
          f"`requests` of the same run over TLS, {META['COUNT_DURATION']} without warm-up:", "",
          "| run | nginx log lines | volley sent | completed | unfinished (in flight at the end) | errors | completed + unfinished = log? |",
          "|---|---:|---:|---:|---:|---:|---|"]
    for c in ("count-ka", "count-close"):
        for r in runs(c):
            q = r["json"]["requests"]
            ok = q["completed"] + q["unfinished"] == r["log_lines"]
            L.append(f"| {LABEL[c]} | {r['log_lines']:,} | {q['sent']:,} | {q['completed']:,} | {q['unfinished']:,} | "
                     f"{q['errors']:,} | {'yes' if ok else '**no** (differs by %+d)' % (r['log_lines'] - q['completed'] - q['unfinished'])} |")
    L += ["", f"Open loop at {META['STALL_RATE']} req/s, {META['STALL_CONNECTIONS']} connections, 10 s, against the same nginx "
          f"whose worker is stopped (SIGSTOP) for {META['STALL_MS']} ms at 2 s and again at 7 s after the client starts "
          "(the stall of tests/quick/open_loop.rs, on a real server); HTTPS and plain HTTP interleaved. The corrected "
          "latency (from each request's due time) must show the stalls the same way over both:", "",
          "| rep | protocol | completed | corrected p50 | p90 | p99 | max | service p50 | service p99 | schedule lag p99 |",
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    S = {c: runs(c) for c in ("stall-https", "stall-http")}
    for r in sorted(S["stall-https"] + S["stall-http"], key=lambda r: r["seq"]):
        d = r["json"]
        lat, svc, lag = d["latency_us"], d["service_time_us"], d.get("schedule_lag_us") or {}
        L.append(f"| {r['rep']} | {LABEL[r['cell']]} | {d['requests']['completed']:,} | {us(lat['p50'])} | {us(lat['p90'])} | "
                 f"{us(lat['p99'])} | {us(lat['max'])} | {us(svc['p50'])} | {us(svc['p99'])} | {us(lag.get('p99'))} |")
    if S["stall-https"] and S["stall-http"]:
        L.append("")
        for k in ("p50", "p90", "p99"):
            a = med([r["json"]["latency_us"][k] for r in S["stall-https"]])
            b = med([r["json"]["latency_us"][k] for r in S["stall-http"]])
            L.append(f"- corrected {k}: HTTPS {us(a)}, plain {us(b)} (medians; HTTPS − plain {us(a - b) if a >= b else '−' + us(b - a)})")
    SECTIONS["tls-correct"] = L

# ------------------------------------------------------------------ memory
if "tls-memory" in TABLES:
    ns = sorted(int(n) for n in META["MEM_CONNS"].split())
    cells = [f"mem-{p}-{n}" for n in ns for p in ("https", "http")]
    L = header(cells)
    L += [f"Closed loop with N keep-alive connections, each sending its next GET {META['THINK_TIME']} after the previous "
          f"response (`--think-time {META['THINK_TIME']}`), {META['MEM_DURATION']}, `--timeout 10s`; nginx listens with "
          "backlog=4096. Client RSS from `client.rss_max_bytes` (volley's own peak) and `/usr/bin/time`'s max RSS. "
          f"Medians of {min(REPS, int(META.get('MEM_REPS', REPS)))} run(s):", "",
          "| protocol | connections | opened | req/s | errors | `client.rss_max_bytes` | /usr/bin/time max RSS |",
          "|---|---:|---:|---:|---:|---:|---:|"]
    M = {}
    for c in cells:
        rs = runs(c)
        if not rs:
            continue
        p, n = c.split("-")[1], int(c.split("-")[2])
        M[(p, n)] = med([r["rss"] for r in rs])
        L.append(f"| {'HTTPS' if p == 'https' else 'plain HTTP'} | {n:,} | {med([r['connections'] for r in rs]):,.0f} | "
                 f"{med([r['rps'] for r in rs]):,.0f} | {med([r['errors'] for r in rs]):,.0f} | {mib(M[(p, n)])} | "
                 f"{med([r['maxrss_kib'] for r in rs]) / 1024:.1f} MiB |")
    L.append("")
    hi, lo = ns[-1], ns[0]
    if ("https", hi) in M:
        L.append(f"**Target `client.rss_max_bytes` ≤ 128 MiB with {hi:,} TLS connections: {mib(M[('https', hi)])}, "
                 f"{'met' if M[('https', hi)] <= 128 * 1048576 else '**not met**'}.**")
    if len(ns) > 1 and all(k in M for k in (("https", hi), ("https", lo), ("http", hi), ("http", lo))):
        t = (M[("https", hi)] - M[("https", lo)]) / (hi - lo) / 1024
        h = (M[("http", hi)] - M[("http", lo)]) / (hi - lo) / 1024
        L.append(f"\nPer connection (RSS at {hi:,} − RSS at {lo:,}, ÷ {hi - lo:,}): HTTPS {t:.1f} KiB, plain HTTP {h:.1f} KiB, "
                 f"so one TLS session costs about {t - h:.1f} KiB of client memory on top of the connection.")
    rs = sorted((r for c in cells for r in runs(c)), key=lambda r: r["seq"])
    L += ["", "| # | rep | run | opened | requests | errors | rss_max_bytes | max RSS | CPU s | notes |",
          "|---:|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rs:
        L.append(f"| {r['seq']} | {r['rep']} | {r['cell']} | {r['connections']:,} | {r['requests']:,} | {r['errors']:,} | "
                 f"{mib(r['rss'])} | {r['maxrss_kib'] / 1024:.1f} MiB | {r['cpu']:.2f} | {notes(r)} |")
    SECTIONS["tls-memory"] = L

for name, lines in SECTIONS.items():
    print(f"\n### {name}\n")
    print("\n".join(lines))

if UPDATE_MD != "0":
    text = open(BENCH_MD).read() if os.path.exists(BENCH_MD) else "# Benchmarks\n"
    for name in ("tls-keepalive", "tls-close", "tls-correct", "tls-memory"):
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
    print(f"\n[tls] rewrote the {', '.join(SECTIONS)} section(s) of {BENCH_MD}", file=sys.stderr)
