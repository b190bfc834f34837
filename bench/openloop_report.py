#!/usr/bin/env python3
"""Render the raw outputs of bench/openloop.sh (OUT_DIR) as the Markdown section between
<!-- SECTION:begin --> and <!-- SECTION:end --> of BENCH_MD (printed in any case; written when
UPDATE_MD is 1). Run by openloop.sh; by hand:
    OUT_DIR=target/bench-openloop/<time> BENCH_MD=BENCHMARKS.md ROOT=. python3 bench/openloop_report.py
(or REPORT_FROM=<dir> bench/openloop.sh)."""
import json
import os
import statistics
import sys

out_dir = os.environ["OUT_DIR"]
ROOT = os.environ.get("ROOT", ".")
BENCH_MD = os.environ.get("BENCH_MD", os.path.join(ROOT, "BENCHMARKS.md"))
UPDATE_MD = os.environ.get("UPDATE_MD", "1")
SECTION = os.environ.get("SECTION", "openloop-cost")
HZ = os.sysconf("SC_CLK_TCK")
med = statistics.median


def fail(msg):
    print(f"[openloop] error: {msg}", file=sys.stderr)
    sys.exit(1)


def read(path):
    try:
        return open(path).read()
    except Exception as ex:
        fail(f"cannot read {path}: {ex}")


E = json.loads(read(os.path.join(out_dir, "meta.json")))
REPS = int(E["REPS"])
BUSY_MAX, OTHER_MAX = int(E["BUSY_MAX"]), int(E["OTHER_MAX"])
RATES = [int(r) for r in E["RATES"].split()]
COMMANDS = dict(l.rstrip("\n").split("\t", 1) for l in open(os.path.join(out_dir, "commands.tsv")) if l.strip())
ORDER = [tuple(l.split()) for l in open(os.path.join(out_dir, "runs.tsv")) if l.strip()]
BASE = E.get("BASELINE_NAME") or ""


def kind_rate(cell):
    if cell in ("closed", "base-closed"):
        return cell, None
    k, r = cell.rsplit("-", 1)
    return k, int(r)


def run_of(seq, rep, cell, attempts):
    base = os.path.join(out_dir, f"{cell}-rep{rep}")
    try:
        u, s, e, m, w, c = read(base + ".time").split()[-6:]
        u, s, e, rss, vol, invol = float(u), float(s), float(e), int(m) * 1024, int(w), int(c)
    except ValueError:
        fail(f"cannot parse {base}.time")
    (b0, t0, n0), (b1, t1, n1) = [map(int, l.split()) for l in read(base + ".ticks").splitlines()[:2]]
    wall = (t1 - t0) / HZ / int(E["NCPU"])
    server = (n1 - n0) / HZ
    other = (b1 - b0) / HZ - server - (u + s)
    kind, rate = kind_rate(cell)
    r = dict(seq=int(seq), rep=int(rep), cell=cell, kind=kind, rate=rate, user=u, sys=s, wall=e, rss=rss,
             vol=vol, invol=invol, server_pct=100 * server / wall, other_pct=max(0.0, 100 * other / wall),
             busy=int(read(base + ".busy").strip() or 0), notes=[])
    if kind == "zrk":
        try:
            d = json.load(open(base + ".json"))
        except Exception as ex:
            fail(f"cannot read {base}.json: {ex}")
        n = d["requests"]
        if n <= 0:
            fail(f"{cell} rep {rep}: no requests completed")
        r.update(requests=n, achieved=d["achieved_rate"], lag50=None, lag99=None, lat50=d["latency_us"]["p50"],
                 lat99=d["latency_us"]["p99"], svc50=None, svc99=None, waits=None, sat=None)
        r["notes"].append(f"zrk's max schedule lag {d['max_schedule_lag_us']:,} µs")
        errors = sum(v for v in (d.get("errors") or {}).values() if isinstance(v, int))
        if errors:
            r["notes"].append(f"errors {errors}")
    elif kind in ("floor", "floorio"):
        d = json.loads(read(base + ".out").strip().splitlines()[-1])
        n = d["due"]
        r.update(requests=n, achieved=None, lag50=d["lag_p50_us"], lag99=d["lag_p99_us"], lat50=None, lat99=None,
                 svc50=None, waits=d["waits"])
        if kind == "floorio" and d["responses"] < d["written"]:
            r["notes"].append(f"{d['written'] - d['responses']:,} responses not read")
    else:
        try:
            d = json.load(open(base + ".json"))
        except Exception as ex:
            fail(f"cannot read {base}.json: {ex}")
        req = d["requests"]
        n = req["completed"]
        if n <= 0:
            fail(f"{cell} rep {rep}: no requests completed")
        lag = d.get("schedule_lag_us") or {}
        r.update(requests=n, achieved=n / d["elapsed_s"], lag50=lag.get("p50"), lag99=lag.get("p99"),
                 lat50=d["latency_us"]["p50"], lat99=d["latency_us"]["p99"],
                 svc50=(d.get("service_time_us") or {}).get("p50"),
                 svc99=(d.get("service_time_us") or {}).get("p99"), waits=None,
                 sat=1.0 if (d.get("client") or {}).get("saturated") else 0.0)
        if req["errors"]:
            r["notes"].append(f"errors {req['errors']}")
        if req.get("unsent"):
            r["notes"].append(f"unsent {req['unsent']:,}")
        if (d.get("client") or {}).get("saturated"):
            r["notes"].append("volley flags client saturated")
    r["cpu_us"] = (u + s) / n * 1e6
    r["wake"] = vol / n
    if r["busy"] > BUSY_MAX:
        r["notes"].insert(0, f"**machine {r['busy']} % busy before the run**")
    if r["other_pct"] > OTHER_MAX:
        r["notes"].insert(0, "**other work during the run**")
    if int(attempts) > 1:
        r["notes"].insert(0, f"attempt {attempts} (earlier ones had other work on the machine)")
    return r


RUNS = [run_of(*o) for o in ORDER]


def runs(kind, rate=None):
    return [r for r in RUNS if r["kind"] == kind and r["rate"] == rate]


def m(rs, key):
    xs = [r[key] for r in rs if r[key] is not None]
    return med(xs) if xs else None


def us(v):
    return "—" if v is None else f"{v:,.0f} µs"


def f2(v):
    return "—" if v is None else f"{v:.2f}"


def rng(rs, key, fmt="{:.1f}"):
    xs = [r[key] for r in rs if r[key] is not None]
    if not xs:
        return "—"
    return fmt.format(med(xs)) + (f" ({fmt.format(min(xs))}–{fmt.format(max(xs))})" if len(xs) > 1 else "")


L = []
L.append(f"Run {E['DATE']} by `REPS={REPS} DURATION={E['DURATION']} RATES=\"{E['RATES']}\""
         + (f" CELLS=\"{E['CELLS']}\"" if E.get("CELLS", "open closed floor floorio base")
            != "open closed floor floorio base" else "")
         + (" ZRK_REPO=… ZIO_REPO=…" if E.get("ZRK_VERSION") else "")
         + (f" BATCH_WINDOW_US={E['BATCH_WINDOW_US']}" if E.get("BATCH_WINDOW_US") else "")
         + (f" THIS_IO={E['THIS_IO']} BASELINE_IO={E['BASELINE_IO']}" if E.get("THIS_IO", "auto") != "auto" else "")
         + (" BASELINE=… " if BASE else " ") + "bench/openloop.sh`"
         + f" (CONNECTIONS={E['CONNECTIONS']}); raw outputs were in `{os.path.relpath(out_dir, ROOT)}/`.")
L.append("")
busy = [r["busy"] for r in RUNS]
others = [r["other_pct"] for r in RUNS]
flagged = [r for r in RUNS if r["busy"] > BUSY_MAX or r["other_pct"] > OTHER_MAX]
L.append(f"- Server: {E['SERVER_VERSION']} (one worker, the reference settings of servers/nginx/, "
         f"`return 200 '.'`), pinned to CPU {E['SERVER_CPU']}; every client pinned to CPU {E['CLIENT_CPU']}")
L.append(f"- Machine: {E['CPU_MODEL'] or 'unknown CPU'}, {E['NCPU']} CPUs, {E['KERNEL']}; busy with other work "
         f"just before each run: {min(busy)}–{max(busy)} % of all CPUs; other work during the runs: "
         f"{min(others):.0f}–{max(others):.0f} % of a core (a run above {OTHER_MAX} % is repeated, at most "
         f"{E.get('RETRIES', '?')} times)")
L.append(f"- Versions: {E['VOLLEY_VERSION']}" + (f"; baseline {E['BASELINE_VERSION']}" if BASE else "")
         + (f"; zrk: {E['ZRK_VERSION']}" if E.get("ZRK_VERSION") else "")
         + f"; floor built with {E['GCC_VERSION']}")
if flagged:
    L.append(f"- **Warning:** {len(flagged)} of {len(RUNS)} runs had other work on the machine; their numbers are noisy.")
L += ["", "```sh", E["CMD_SERVER"]]
shown = set()
for cell, cmd in COMMANDS.items():
    if cell.startswith("perf-"):
        continue
    kind, rate = kind_rate(cell)
    if kind in shown:
        continue
    shown.add(kind)
    L.append(cmd.replace(f"-R {rate} ", "-R $R ").replace(f"timed_wake {rate} ", "timed_wake $R ")
             if rate else cmd)
L += [f"# R in {E['RATES']}; {E['CMD_VOLLEY_NOTE']}", "```", ""]
L.append(f"{E['CONNECTIONS']} keep-alive connections, one thread, uniform arrivals, {E['DURATION']} per run; every "
         f"repetition runs every cell, the order rotating by one per repetition; medians of {REPS} (range in "
         "brackets). CPU = user + sys of the client process (`/usr/bin/time`) per completed request (volley) or "
         "per due request (floor). Wake-ups = voluntary context switches per request (`/usr/bin/time %w`; "
         "volley's aggregator and CPU-sampler threads add about 2 a second). ×closed = CPU per request ÷ the "
         "closed loop's in the same session; ×floor = ÷ the floor's (one epoll_pwait2 per due time, no I/O) at "
         "the same rate. Lag = `schedule_lag_us`, corrected = `latency_us` (from the due time), service = "
         "`service_time_us` (from the write).")
L.append("")

closed = {"this": runs("closed"), "base": runs("base-closed")}
L.append("| build | rate | CPU µs/req | ×closed | ×floor | wake-ups/req | lag p50 | lag p99 | corrected p50 | "
         "corrected p99 | service p50 | service p99 | achieved req/s | off by |")
L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
THIS = "this build" + (f" --io {E['THIS_IO']}" if E.get("THIS_IO", "auto") != "auto" else "")
builds = [("this", "open", THIS)] + ([("base", "base", BASE)] if runs("base-closed") or any(
    runs("base", r) for r in RATES) else [])
verdicts = []
for who, kind, label in builds:
    cr = closed[who]
    if cr:
        L.append(f"| {label} | closed loop ({m(cr, 'achieved'):,.0f} req/s) | {rng(cr, 'cpu_us')} | 1 | — | "
                 f"{rng(cr, 'wake', '{:.2f}')} | — | — | {us(m(cr, 'lat50'))} | {us(m(cr, 'lat99'))} | "
                 f"{us(m(cr, 'svc50'))} | {us(m(cr, 'svc99'))} | {m(cr, 'achieved'):,.0f} | — |")
    for rate in RATES:
        rs = runs(kind, rate)
        if not rs:
            continue
        cpu = m(rs, "cpu_us")
        x_closed = cpu / m(cr, "cpu_us") if cr else None
        fl = runs("floor", rate)
        x_floor = cpu / m(fl, "cpu_us") if fl else None
        ach = m(rs, "achieved")
        off = 100 * (ach - rate) / rate
        L.append(f"| {label} | {rate:,} | {rng(rs, 'cpu_us')} | {f2(x_closed)} | {f2(x_floor)} | "
                 f"{rng(rs, 'wake', '{:.2f}')} | {us(m(rs, 'lag50'))} | {us(m(rs, 'lag99'))} | {us(m(rs, 'lat50'))} | "
                 f"{us(m(rs, 'lat99'))} | {us(m(rs, 'svc50'))} | {us(m(rs, 'svc99'))} | {ach:,.1f} | "
                 f"{off:+.2f} % |")
        if who == "this":
            if rate >= 100000:
                # The one-core targets: the rate held, volley not saturated, lag p99 ≤ 200 µs,
                # corrected p99 within 2× the service p99.
                sat, lag99 = sum(r["sat"] for r in rs), m(rs, "lag99")
                lat99, svc99 = m(rs, "lat99"), m(rs, "svc99")
                held = abs(off) <= 1 and sat == 0 and lag99 <= 200 and lat99 <= 2 * svc99
                verdicts.append(f"{rate:,} req/s: achieved {off:+.2f} %, client saturated in {sat:.0f} of "
                                f"{len(rs)} runs, lag p99 {lag99:.0f} µs (≤ 200), corrected p99 "
                                f"{lat99 / svc99:.1f}× the service p99 (≤ 2): {'held' if held else 'NOT held'}")
            elif rate >= 20000 and x_closed is not None:
                verdicts.append(f"{rate:,} req/s: {x_closed:.2f}× the closed loop (target ≤ 2: "
                                f"{'met' if x_closed <= 2 else 'NOT met'}), achieved {off:+.2f} % "
                                f"({'within' if abs(off) <= 1 else 'NOT within'} 1 %)")
            elif rate < 20000:
                w = m(rs, "wake")
                verdicts.append(f"{rate:,} req/s: {w:.2f} wake-ups per request (target ≤ 1: "
                                f"{'met' if w <= 1.0 else 'NOT met'})"
                                + (f", {x_floor:.2f}× the floor" if x_floor else ""))
for kind, label in (("floor", "floor: epoll_pwait2 per due time, no I/O"),
                    ("floorio", "floor + one keep-alive GET per due time")):
    for rate in RATES:
        rs = runs(kind, rate)
        if rs:
            L.append(f"| {label} | {rate:,} | {rng(rs, 'cpu_us')} | — | — | {rng(rs, 'wake', '{:.2f}')} | "
                     f"{us(m(rs, 'lag50'))} | {us(m(rs, 'lag99'))} | — | — | — | — | — | — |")
zrk_rows = [rate for rate in RATES if runs("zrk", rate)]
for rate in zrk_rows:
    rs = runs("zrk", rate)
    cpu, ach = m(rs, "cpu_us"), m(rs, "achieved")
    cr, fl = closed["this"], runs("floor", rate)
    L.append(f"| zrk | {rate:,} | {rng(rs, 'cpu_us')} | {f2(cpu / m(cr, 'cpu_us') if cr else None)} | "
             f"{f2(cpu / m(fl, 'cpu_us') if fl else None)} | {rng(rs, 'wake', '{:.2f}')} | — | — | "
             f"{us(m(rs, 'lat50'))} | {us(m(rs, 'lat99'))} | — | — | {ach:,.1f} | {100 * (ach - rate) / rate:+.2f} % |")
L.append("")
if zrk_rows:
    # The second anchor: the same schedule from another io_uring client, in the same session.
    parts = []
    for rate in zrk_rows:
        z, v = runs("zrk", rate), runs("open", rate)
        if v:
            parts.append(f"{rate:,} req/s: volley {m(v, 'cpu_us'):.1f} µs a request against zrk's "
                         f"{m(z, 'cpu_us'):.1f} (volley {m(z, 'cpu_us') / m(v, 'cpu_us'):.2f}× zrk's requests per CPU-second), "
                         f"corrected p99 {us(m(v, 'lat99'))} against {us(m(z, 'lat99'))}")
    if parts:
        L.append(f"**Against zrk** ({E.get('ZRK_VERSION') or 'zrk'}, `-t 1 -c {E['CONNECTIONS']}`, the same "
                 "rates, interleaved): " + "; ".join(parts) + ".")
        L.append("")
if verdicts:
    L.append("**Targets (this build):** " + "; ".join(verdicts) + ".")
    L.append("")

# perf stat: syscalls and context switches per request
perf_cells = sorted(c[5:] for c in COMMANDS if c.startswith("perf-"))
if perf_cells:
    L.append(f"Syscalls and context switches per completed request, each build once under `perf stat` "
             f"({E.get('PERF_VERSION', '')}, {E.get('PERF_DURATION', '?')} runs; tracepoints, the client runs at "
             "full speed):")
    L.append("")
    rows = []
    names = []
    for cell in perf_cells:
        base = os.path.join(out_dir, f"perf-{cell}")
        try:
            d = json.load(open(base + ".json"))
        except Exception as ex:
            fail(f"cannot read {base}.json: {ex}")
        n = d["requests"]["completed"]
        counts = {}
        for line in read(base + ".perf").splitlines():
            parts = line.split(",")
            if len(parts) > 2 and parts[0].replace(".", "").isdigit():
                ev = parts[2].replace("syscalls:sys_enter_", "").replace("raw_syscalls:sys_enter", "all syscalls")
                counts[ev] = float(parts[0])
        for k in counts:
            if k not in names:
                names.append(k)
        kind, rate = kind_rate(cell)
        rows.append(((THIS if kind == "open" else BASE), rate, n, counts))
    names = [k for k in names if any(c.get(k, 0) > 0 for *_, c in rows)]
    L.append("| build | rate | requests | " + " | ".join(names) + " |")
    L.append("|---|---:|---:|" + "---:|" * len(names))
    for label, rate, n, counts in sorted(rows, key=lambda x: (x[1], x[0])):
        L.append(f"| {label} | {rate:,} | {n:,} | " + " | ".join(f"{counts.get(k, 0) / n:.2f}" for k in names) + " |")
    L.append("")

L.append("All runs, in the order they ran:")
L.append("")
L.append("| # | rep | run | requests | user s | sys s | CPU µs/req | wake-ups/req | lag p50 | lag p99 | "
         "corrected p50 | corrected p99 | nginx CPU | other CPU | busy before | notes |")
L.append("|---:|---:|---|" + "---:|" * 12 + "---|")
for r in sorted(RUNS, key=lambda r: r["seq"]):
    L.append(f"| {r['seq']} | {r['rep']} | {r['cell']} | {r['requests']:,} | {r['user']:.2f} | {r['sys']:.2f} | "
             f"{r['cpu_us']:.1f} | {r['wake']:.2f} | {us(r['lag50'])} | {us(r['lag99'])} | {us(r['lat50'])} | "
             f"{us(r['lat99'])} | {r['server_pct']:.0f} % | {r['other_pct']:.0f} % | {r['busy']} % | "
             f"{'; '.join(r['notes'])} |")
L.append("")

b, e = f"<!-- {SECTION}:begin -->", f"<!-- {SECTION}:end -->"
section = b + "\n" + "\n".join(L) + e
print(section)
if verdicts:
    print("[openloop] " + "; ".join(verdicts), file=sys.stderr)
if UPDATE_MD == "1":
    text = open(BENCH_MD).read() if os.path.exists(BENCH_MD) else ""
    if b in text and e in text and text.index(b) < text.index(e):
        text = text[: text.index(b)] + section + text[text.index(e) + len(e):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    open(BENCH_MD, "w").write(text)
    print(f"[openloop] wrote the {SECTION} section of {BENCH_MD}", file=sys.stderr)
