#!/usr/bin/env python3
"""Render the raw outputs of bench/shards_netns.sh (OUT_DIR) as the Markdown section between
<!-- shards-netns:begin --> and <!-- shards-netns:end --> of BENCH_MD (printed in any case;
written when UPDATE_MD is 1). Run by shards_netns.sh; by hand:
    OUT_DIR=target/bench-shards-netns/<time> BENCH_MD=BENCHMARKS.md ROOT=. python3 bench/shards_netns_report.py
(or REPORT_FROM=<dir> bench/shards_netns.sh)."""
import glob
import json
import os
import statistics
import sys

out_dir = os.environ["OUT_DIR"]
ROOT = os.environ.get("ROOT", ".")
BENCH_MD = os.environ.get("BENCH_MD", os.path.join(ROOT, "BENCHMARKS.md"))
UPDATE_MD = os.environ.get("UPDATE_MD", "1")
TAG = "shards-netns"
med = statistics.median
QS = ("p50", "p90", "p99", "p99_9")
QNAME = {"p50": "p50", "p90": "p90", "p99": "p99", "p99_9": "p99.9"}


def fail(msg):
    print(f"[{TAG}] error: {msg}", file=sys.stderr)
    sys.exit(1)


def load(path):
    try:
        return json.load(open(path))
    except Exception as ex:
        fail(f"cannot read {path}: {ex}")


E = load(os.path.join(out_dir, "meta.json"))
RATE = float(E["RATE"])
BUSY_MAX, OTHER_MAX = int(E["BUSY_MAX"]), int(E["OTHER_MAX"])
COMMANDS = dict(l.rstrip("\n").split("\t", 1) for l in open(os.path.join(out_dir, "commands.tsv")))


def run_of(seq, rep, cell, busy, before, after, attempts, other):
    base = os.path.join(out_dir, f"{cell}-rep{rep}")
    d = load(base + ".json")
    req = d["requests"]
    r = dict(seq=int(seq), rep=int(rep), cell=cell, busy=int(busy), other=int(other), n=1 if cell == "single" else int(cell[1:]),
             achieved=d.get("achieved_rps"), throughput=d["throughput_rps"], completed=req["completed"],
             sent=req["sent"], errors=req["errors"], server=int(after) - int(before),
             lat={q: d["latency_us"][q] for q in QS}, late=[], started=[], saturated=[], notes=[])
    if cell != "single":
        shards = sorted(glob.glob(base + "-shard*.json"))
        if len(shards) != r["n"]:
            fail(f"{cell} rep {rep}: {len(shards)} shard files, {r['n']} expected")
        for f in shards:
            s = load(f)
            r["late"].append(s["shard"]["start_late_us"])
            r["started"].append(s["started_at"])
            if (s.get("client") or {}).get("saturated"):
                r["saturated"].append(s["shard"]["index"])
    if r["achieved"] is None:
        fail(f"{cell} rep {rep}: no achieved_rps (not an open-loop run?)")
    r["off"] = 100 * (r["achieved"] - RATE) / RATE
    if r["errors"]:
        r["notes"].append(f"{r['errors']:,} errors")
    if r["server"] != r["completed"]:
        r["notes"].append(f"**server counted {r['server']:,}, the result {r['completed']:,}**")
    if r["saturated"]:
        r["notes"].append("volley flags shard(s) " + ", ".join(map(str, r["saturated"])) + " saturated")
    elif cell == "single" and (d.get("client") or {}).get("saturated"):
        r["notes"].append("volley flags client saturated")
    if r["busy"] > BUSY_MAX:
        r["notes"].insert(0, f"**machine {r['busy']} % busy before the run**")
    if r["other"] > OTHER_MAX:
        r["notes"].insert(0, "**other work during the run**")
    if int(attempts) > 1:
        r["notes"].insert(0, f"attempt {attempts} (earlier ones had other work on the machine)")
    return r


def started_spread_us(r):
    from datetime import datetime
    ts = [datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() for s in r["started"]]
    return (max(ts) - min(ts)) * 1e6 if ts else None


RUNS = [run_of(*l.split()) for l in open(os.path.join(out_dir, "runs.tsv")) if l.strip()]
SINGLE = {r["rep"]: r for r in RUNS if r["cell"] == "single"}
for r in RUNS:
    r["spread"] = started_spread_us(r)
NS = sorted({r["n"] for r in RUNS if r["n"] > 1})


def us(v):
    if v is None:
        return "—"
    return f"{v / 1000:,.2f} ms" if v >= 10_000 else f"{v:,.0f} µs"


def pct(v):
    return f"{v:+.2f} %"


def ratio(r, q):
    s = SINGLE.get(r["rep"])
    if not s or not s["lat"][q] or r["lat"][q] is None:
        return None
    return r["lat"][q] / s["lat"][q]


def rng(xs, fmt):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "—"
    return fmt(med(xs)) + (f" ({fmt(min(xs))}–{fmt(max(xs))})" if len(xs) > 1 else "")


L = []
L.append(f"Run {E['DATE']} by `REPS={E['REPS']} DURATION={E['DURATION']} bench/shards_netns.sh` "
         f"(RATE={E['RATE']}, CONNECTIONS={E['CONNECTIONS']}, SHARDS=\"{E['SHARDS']}\"); raw outputs were in "
         f"`{os.path.relpath(out_dir, ROOT)}/`.")
L.append("")
busy = [r["busy"] for r in RUNS]
others = [r["other"] for r in RUNS]
flagged = [r for r in RUNS if r["busy"] > BUSY_MAX or r["other"] > OTHER_MAX]
L.append(f"- Topology: one server namespace with a bridge, one namespace per generator host joined to it by "
         f"its own veth pair; `volley serve` pinned to CPU {E['SERVER_CPU']}, every generator (all N shards, "
         f"and the unsharded run) pinned to CPU {E['CLIENT_CPU']} with taskset")
L.append(f"- Machine: {E['CPU_MODEL'] or 'unknown CPU'}, {E['NCPU']} CPUs, {E['KERNEL']}; busy with other work "
         f"just before each run: {min(busy)}–{max(busy)} % of all CPUs (the script waits up to "
         f"{E['WAIT_QUIET']} s for at most {BUSY_MAX} %); other work during the runs: {min(others)}–{max(others)} % "
         f"of a core (the machine's busy time less the server's and the generators' CPU time, the kernel's packet "
         f"work of the run itself included; a run above "
         f"{OTHER_MAX} % is repeated, at most {E['RETRIES']} times)")
L.append(f"- Version: {E['VOLLEY_VERSION']}")
if flagged:
    L.append(f"- **Warning:** {len(flagged)} of {len(RUNS)} runs had other work on the machine (over {BUSY_MAX} % "
             f"busy just before, or over {OTHER_MAX} % of a core used by neither volley nor the server during the "
             "run); their numbers, the tail above all, are noisy.")
L += ["", "```sh", COMMANDS["server"], COMMANDS["single"], COMMANDS["shard"] + "   # i = 0 .. N-1, all at once",
      COMMANDS["merge"], f"# {E['CMD_VOLLEY_NOTE']}", "```", ""]
L.append(f"Open loop at {RATE:,.0f} req/s in all over {int(E['CONNECTIONS'])} keep-alive connections, "
         f"{E['DURATION']} per run; `--start-at` {int(E['START_LEAD_MS']) / 1000:g} s ahead of the launch. Every "
         "repetition runs the unsharded load and each shard count once, the order rotating by one per repetition. "
         "Rate = the merged `achieved_rps` (each shard's requests written in its send window ÷ that window, "
         "added up) against the requested total. Start = `shard.start_late_us`, how late each shard began "
         "after `--start-at`: the latest, and the latest − the earliest (skew). Shape = the merged "
         "corrected-latency percentile ÷ the unsharded run's of the same repetition. Count = the server's "
         "own count of the run against the merged `requests.completed`.")
L.append("")
L.append("| shards | achieved req/s | rate off by | latest start | start skew | p50 ratio | p90 ratio | "
         "p99 ratio | p99.9 ratio | server count = merged |")
L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for n in NS:
    rs = [r for r in RUNS if r["n"] == n]
    counts = sum(1 for r in rs if r["server"] == r["completed"])
    L.append(f"| {n} | {rng([r['achieved'] for r in rs], lambda v: f'{v:,.1f}')} | "
             f"{rng([r['off'] for r in rs], pct)} | {rng([max(r['late']) for r in rs], us)} | "
             f"{rng([max(r['late']) - min(r['late']) for r in rs], us)} | "
             + " | ".join(rng([ratio(r, q) for r in rs], lambda v: f"{v:.2f}") for q in QS)
             + f" | {counts} of {len(rs)} |")
singles = list(SINGLE.values())
L.append("")
L.append(f"Medians (range) over {E['REPS']} repetitions. The unsharded runs: achieved "
         f"{rng([r['achieved'] for r in singles], lambda v: f'{v:,.1f}')} req/s, "
         + ", ".join(f"{QNAME[q]} {rng([r['lat'][q] for r in singles], us)}" for q in QS)
         + f"; the server's count equalled `requests.completed` in "
         f"{sum(1 for r in singles if r['server'] == r['completed'])} of {len(singles)}.")
L.append("")
L.append("All runs, in the order they ran (latest start, skew: over the run's shards; `started_at` spread: the "
         "shards' first-request clocks, which merge aligns on):")
L.append("")
L.append("| # | rep | run | achieved req/s | off by | latest start | start skew | `started_at` spread | "
         "p50 | p90 | p99 | p99.9 | completed | server count | busy before | other CPU | notes |")
L.append("|---:|---:|---|" + "---:|" * 13 + "---|")
for r in sorted(RUNS, key=lambda r: r["seq"]):
    name = "unsharded" if r["n"] == 1 else f"{r['n']} shards"
    late = us(max(r["late"])) if r["late"] else "—"
    skew = us(max(r["late"]) - min(r["late"])) if r["late"] else "—"
    L.append(f"| {r['seq']} | {r['rep']} | {name} | {r['achieved']:,.1f} | {pct(r['off'])} | {late} | {skew} | "
             f"{us(r['spread'])} | " + " | ".join(us(r["lat"][q]) for q in QS)
             + f" | {r['completed']:,} | {r['server']:,} | {r['busy']} % | {r['other']} % | {'; '.join(r['notes'])} |")
L.append("")

b, e = f"<!-- {TAG}:begin -->", f"<!-- {TAG}:end -->"
section = b + "\n" + "\n".join(L) + e
print(section)
if UPDATE_MD == "1":
    text = open(BENCH_MD).read() if os.path.exists(BENCH_MD) else ""
    if b in text and e in text and text.index(b) < text.index(e):
        text = text[: text.index(b)] + section + text[text.index(e) + len(e):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    open(BENCH_MD, "w").write(text)
    print(f"[{TAG}] wrote the {TAG} section of {BENCH_MD}", file=sys.stderr)
