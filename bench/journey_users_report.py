#!/usr/bin/env python3
"""Render the raw outputs of bench/journey_users.sh (OUT_DIR) as the Markdown section between
<!-- journey-users:begin --> and <!-- journey-users:end --> of BENCH_MD (printed in any case;
written when UPDATE_MD is 1). Run by journey_users.sh; by hand:
    OUT_DIR=target/bench-journey-users/<time> BENCH_MD=BENCHMARKS.md ROOT=. python3 bench/journey_users_report.py
(or REPORT_FROM=<dir> bench/journey_users.sh)."""
import json
import os
import statistics
import sys

out_dir = os.environ["OUT_DIR"]
ROOT = os.environ.get("ROOT", ".")
BENCH_MD = os.environ.get("BENCH_MD", os.path.join(ROOT, "BENCHMARKS.md"))
UPDATE_MD = os.environ.get("UPDATE_MD", "1")
med = statistics.median
MiB = 2**20
TAG = "journey-users"


def fail(msg):
    print(f"[{TAG}] error: {msg}", file=sys.stderr)
    sys.exit(1)


def read(path):
    try:
        return open(path).read()
    except Exception as ex:
        fail(f"cannot read {path}: {ex}")


E = json.loads(read(os.path.join(out_dir, "meta.json")))
REPS, USERS, BUSY_MAX = int(E["REPS"]), int(E["USERS"]), int(E["BUSY_MAX"])
COMMANDS = dict(l.rstrip("\n").split("\t", 1) for l in open(os.path.join(out_dir, "commands.tsv")))
ORDER = [tuple(l.split()) for l in open(os.path.join(out_dir, "runs.tsv")) if l.strip()]
CELLS = ("single", "nocapture", "journey")
LABEL = {
    "single": "single URL `/`",
    "nocapture": "nocapture.toml (the journey's requests, no state)",
    "journey": "journey.toml (3 captures a loop, a cookie jar per user)",
}


def run_of(seq, rep, cell):
    base = os.path.join(out_dir, f"{cell}-rep{rep}")
    try:
        d = json.load(open(base + ".json"))
    except Exception as ex:
        fail(f"cannot read {base}.json: {ex}")
    samples = []
    for line in read(base + ".samples").splitlines():
        f = line.split()
        if len(f) >= 4:
            samples.append(dict(t=float(f[0]), rss=int(f[1]) * 1024, hwm=int(f[2]) * 1024, fds=int(f[3])))
    if not samples:
        fail(f"{cell} rep {rep}: no VmRSS samples")
    req = d["requests"]
    ts = d.get("timeseries") or []
    users = max((b.get("users") or 0 for b in ts), default=0)
    # The last sample while volley held a descriptor per user: the plateau, before it closes them.
    held = [s for s in samples if s["fds"] >= USERS]
    last = held[-1] if held else samples[-1]
    notes = []
    if req["errors"]:
        notes.append(f"errors {req['errors']:,}: " + ", ".join(f"{k} {v:,}" for k, v in d["errors"].items() if v))
    non200 = {k: v for k, v in (d.get("status_codes") or {}).items() if k != "200"}
    if non200:
        notes.append(f"statuses {non200}")
    failed = {k: v for k, v in (d.get("checks") or {}).items() if v}
    if failed:
        notes.append(f"failed checks {failed}")
    if req.get("skipped"):
        notes.append(f"skipped {req['skipped']:,}")
    if users < USERS:
        notes.insert(0, f"**reached {users:,} users, not {USERS:,}**")
    if not held:
        notes.insert(0, f"**never held {USERS:,} descriptors**")
    busy = int(read(base + ".busy").strip() or 0)
    if busy > BUSY_MAX:
        notes.insert(0, f"**machine {busy} % busy before the run**")
    j = d.get("journey") or {}
    c = d["client"]
    return dict(seq=int(seq), rep=int(rep), cell=cell, peak=c["rss_max_bytes"], plateau=last["rss"],
                plateau_t=last["t"], hwm=samples[-1]["hwm"], users=users, opened=d["connections"]["opened"],
                started=j.get("users_started"), requests=req["completed"], rps=d["throughput_rps"],
                cpu=c["cpu_user_s"] + c["cpu_sys_s"], p99=d["latency_us"]["p99"], busy=busy, notes=notes)


RUNS = [run_of(*o) for o in ORDER]


def runs(cell):
    return [r for r in RUNS if r["cell"] == cell]


def paired(a, b, key):
    """Per repetition: cell a's `key` − cell b's, in bytes."""
    out = []
    for rep in range(1, REPS + 1):
        ra = [r for r in runs(a) if r["rep"] == rep]
        rb = [r for r in runs(b) if r["rep"] == rep]
        if ra and rb:
            out.append(ra[-1][key] - rb[-1][key])
    return out


def mib(b):
    return f"{b / MiB:.1f} MiB"


def span(xs, f):
    return f(med(xs)) + (f" ({f(min(xs))} – {f(max(xs))})" if len(xs) > 1 else "")


L = [f"## A journey's users: client memory (`bench/journey_users.sh`)", ""]
L.append(f"Run {E['DATE']} by `bench/journey_users.sh` (REPS={REPS}); raw outputs were in "
         f"`{os.path.relpath(out_dir, ROOT)}/`.")
L.append("")
busy = [r["busy"] for r in RUNS]
L.append(f"- Server: {E['NGINX_VERSION']} (one worker, the settings of bench/lib.sh's write_nginx_conf plus "
         f"`multi_accept on`, the journey's API of journey_locations), pinned to CPU {E['SERVER_CPU']}; volley pinned "
         f"to CPU {E['CLIENT_CPU']}")
L.append(f"- Machine: {E['CPU_MODEL'] or 'unknown CPU'}, {E['NCPU']} CPUs, {E['KERNEL']}; busy with other work just "
         f"before each run: {min(busy)}–{max(busy)} % of all CPUs (the script waits up to {E['WAIT_QUIET']} s for at "
         f"most {BUSY_MAX} %); local port range {E['PORT_RANGE']}; open files {E['NOFILE']}")
L.append(f"- Version: {E['VOLLEY_VERSION']}")
L += ["", "```sh", E["CMD_NGINX"]]
L += [COMMANDS[c] for c in CELLS if c in COMMANDS]
L += [f"# {E['CMD_VOLLEY_NOTE']}", "```", ""]
L.append(f"{USERS:,} users added at {int(E['SPAWN_RATE']):,}/s, each holding one keep-alive connection and sending its "
         f"next request {E['THINK_TIME']} after the previous response, {E['DURATION']} per run (ramp included); the "
         "files are those of the mix section above (`journey.toml`, `nocapture.toml`). Peak RSS is the RunResult's "
         f"`client.rss_max_bytes`; RSS on the plateau is the last VmRSS sample (every {E['SAMPLE_EVERY']} s) while "
         f"volley held a descriptor per user. Every repetition runs the three in a rotating order; medians (range) "
         f"over {REPS}, differences paired within a repetition.")
L.append("")
L.append("| run | peak RSS | RSS on the plateau | per user (peak ÷ users) | users reached | connections opened | "
         "users started (logins) | req/s |")
L.append("|---|---:|---:|---:|---:|---:|---:|---:|")
for cell in CELLS:
    rs = runs(cell)
    if not rs:
        continue
    started = [r["started"] for r in rs if r["started"] is not None]
    L.append(f"| {LABEL[cell]} | {span([r['peak'] for r in rs], mib)} | {span([r['plateau'] for r in rs], mib)} | "
             f"{med(r['peak'] for r in rs) / USERS / 1024:.2f} KiB | {min(r['users'] for r in rs):,} | "
             f"{min(r['opened'] for r in rs):,}–{max(r['opened'] for r in rs):,} | "
             + (f"{min(started):,}–{max(started):,}" if started else "—") + f" | {med(r['rps'] for r in rs):,.0f} |")
L.append("")
heads = []
for a, b, what in (("journey", "nocapture", "a journey's state (variables, captures, cookie jar)"),
                   ("nocapture", "single", "a requests file with a once step, no state kept"),
                   ("journey", "single", "the journey over the bare connections")):
    if not runs(a) or not runs(b):
        continue
    for key, name in (("peak", "peak RSS"), ("plateau", "RSS on the plateau")):
        d = paired(a, b, key)
        heads.append(f"| {a} − {b} | {what} | {name} | {span(d, lambda x: f'{x / MiB:+.1f} MiB')} | "
                     f"{span(d, lambda x: f'{x / USERS / 1024:+.2f} KiB')} |")
if heads:
    L.append("| difference | what it is | measure | total | per user |")
    L.append("|---|---|---|---:|---:|")
    L += heads
    L.append("")
L.append("All runs, in the order they ran:")
L.append("")
L.append("| # | rep | run | peak RSS | RSS on the plateau (at t) | VmHWM | users | requests | req/s | client CPU s | p99 | "
         "busy before | notes |")
L.append("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for r in sorted(RUNS, key=lambda r: r["seq"]):
    L.append(f"| {r['seq']} | {r['rep']} | {r['cell']} | {mib(r['peak'])} | {mib(r['plateau'])} ({r['plateau_t']:.0f} s) | "
             f"{mib(r['hwm'])} | {r['users']:,} | {r['requests']:,} | {r['rps']:,.0f} | {r['cpu']:.2f} | "
             f"{r['p99']:,} µs | {r['busy']} % | {'; '.join(r['notes'])} |")
L.append("")

begin, end = f"<!-- {TAG}:begin -->", f"<!-- {TAG}:end -->"
section = begin + "\n" + "\n".join(L) + end
print(section)
j, n = runs("journey"), runs("nocapture")
if j and n:
    d = paired("journey", "nocapture", "peak")
    print(f"[{TAG}] journey − nocapture, peak RSS: {med(d) / MiB:+.1f} MiB, {med(d) / USERS / 1024:+.2f} KiB per user",
          file=sys.stderr)
if UPDATE_MD == "1":
    text = open(BENCH_MD).read() if os.path.exists(BENCH_MD) else ""
    if begin in text and end in text and text.index(begin) < text.index(end):
        text = text[: text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    open(BENCH_MD, "w").write(text)
    print(f"[{TAG}] wrote the {TAG} section of {BENCH_MD}", file=sys.stderr)
