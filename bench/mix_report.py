#!/usr/bin/env python3
"""Render the raw outputs of bench/mix.sh (OUT_DIR) as the Markdown section between
<!-- mix:begin --> and <!-- mix:end --> of BENCH_MD (printed in any case; written when
UPDATE_MD is 1). Run by mix.sh; by hand:
    OUT_DIR=target/bench-mix/<time> BENCH_MD=BENCHMARKS.md ROOT=. python3 bench/mix_report.py
(or REPORT_FROM=<dir> bench/mix.sh)."""
import json
import os
import statistics
import sys

out_dir = os.environ["OUT_DIR"]
ROOT = os.environ.get("ROOT", ".")
BENCH_MD = os.environ.get("BENCH_MD", os.path.join(ROOT, "BENCHMARKS.md"))
UPDATE_MD = os.environ.get("UPDATE_MD", "1")
HZ = os.sysconf("SC_CLK_TCK")
med = statistics.median

# The comparisons: (name, baseline cell, variant cell, target on variant ÷ baseline).
COMPARISONS = [
    ("mix", "single", "mix", 0.95),
    ("check", "plain1k", "check1k", 0.90),
    ("journey", "nocapture", "journey", 0.67),
]


def fail(msg):
    print(f"[mix] error: {msg}", file=sys.stderr)
    sys.exit(1)


def read(path):
    try:
        return open(path).read()
    except Exception as ex:
        fail(f"cannot read {path}: {ex}")


E = json.loads(read(os.path.join(out_dir, "meta.json")))
REPS = int(E["REPS"])
BUSY_MAX, OTHER_MAX = int(E["BUSY_MAX"]), int(E["OTHER_MAX"])
COMMANDS = dict(l.rstrip("\n").split("\t", 1) for l in open(os.path.join(out_dir, "commands.tsv")))
ORDER = [tuple(l.split()) for l in open(os.path.join(out_dir, "runs.tsv")) if l.strip()]
SERVER_NAME = "nginx" if E["SERVER"] == "nginx" else "volley serve"
KB_URL = "/" + E["KB_PATH"]
LABEL = {
    "single": "single URL `/`",
    "mix": "3-request mix (mix.toml)",
    "plain1k": f"`{KB_URL}` (1 KiB), no check",
    "check1k": f"`{KB_URL}` + `--expect-body-contains {E['NEEDLE']}`",
    "nocapture": "the journey's requests without state (nocapture.toml)",
    "journey": "journey: 3 captures a loop, cookie jar (journey.toml)",
}


def run_of(seq, rep, cell, attempts):
    base = os.path.join(out_dir, f"{cell}-rep{rep}")
    try:
        d = json.load(open(base + ".json"))
    except Exception as ex:
        fail(f"cannot read {base}.json: {ex}")
    try:
        u, s, e, m = read(base + ".time").split()[-4:]
        u, s, e, rss = float(u), float(s), float(e), int(m) * 1024
    except ValueError:
        fail(f"cannot parse {base}.time")
    (b0, t0, n0), (b1, t1, n1) = [map(int, l.split()) for l in read(base + ".ticks").splitlines()[:2]]
    wall = (t1 - t0) / HZ / int(E["NCPU"])
    server = (n1 - n0) / HZ
    other = (b1 - b0) / HZ - server - (u + s)
    req = d["requests"]
    done = req["completed"]
    if done <= 0:
        fail(f"{cell} rep {rep}: no requests completed")
    notes = []
    if req["errors"]:
        notes.append(f"errors {req['errors']}: " + ", ".join(f"{k} {v}" for k, v in d["errors"].items() if v))
    non200 = {k: v for k, v in d.get("status_codes", {}).items() if k != "200"}
    if non200:
        notes.append(f"statuses {non200}")
    failed_checks = {k: v for k, v in (d.get("checks") or {}).items() if v}
    if failed_checks:
        notes.append(f"failed checks {failed_checks}")
    if req.get("skipped"):
        notes.append(f"skipped {req['skipped']:,}")
    if (d.get("client") or {}).get("saturated"):
        notes.append("volley flags client saturated")
    busy = int(read(base + ".busy").strip() or 0)
    other_pct = max(0.0, 100 * other / wall)
    if busy > BUSY_MAX:
        notes.insert(0, f"**machine {busy} % busy before the run**")
    if other_pct > OTHER_MAX:
        notes.insert(0, "**other work during the run**")
    if int(attempts) > 1:
        notes.insert(0, f"attempt {attempts} (earlier ones had other work on the machine)")
    shares = {}
    for ep in d.get("endpoints") or []:
        shares[ep["name"]] = ep["requests"]["sent"] / max(1, req["sent"])
    return dict(seq=int(seq), rep=int(rep), cell=cell, requests=done, rps=d["throughput_rps"], user=u, sys=s,
                wall=e, rss=rss, cpu_per_m=(u + s) / done * 1e6, per_cpu_s=done / max(u + s, 1e-9),
                p50=d["latency_us"]["p50"], p99=d["latency_us"]["p99"], failed=req.get("failed", 0),
                checks=d.get("checks") or {}, server_pct=100 * server / wall, other_pct=other_pct, busy=busy,
                notes=notes, shares=shares, sent_bytes=d["bytes"]["sent"], received_bytes=d["bytes"]["received"],
                statuses=d.get("status_codes") or {}, journey=d.get("journey"))


RUNS = [run_of(*o) for o in ORDER]


def runs(cell):
    return [r for r in RUNS if r["cell"] == cell]


def paired(base, var):
    """Per repetition: the variant's requests per client CPU-second ÷ the baseline's."""
    out = []
    for rep in range(1, REPS + 1):
        b = [r for r in runs(base) if r["rep"] == rep]
        v = [r for r in runs(var) if r["rep"] == rep]
        if b and v:
            out.append(v[-1]["per_cpu_s"] / b[-1]["per_cpu_s"])
    return out


def rng(xs):
    return f"{min(xs):.2f}–{max(xs):.2f}" if len(xs) > 1 else f"{xs[0]:.2f}"


def us(v):
    return "—" if v is None else f"{v:,.0f} µs"


L = ["## Request mixes, response checks and journeys: client CPU per request", ""]
tables = "" if E.get("TABLES", "mix check journey") == "mix check journey" else f"TABLES=\"{E['TABLES']}\" "
L.append(f"Run {E['DATE']} by `{tables}REPS={REPS} DURATION={E['DURATION']} bench/mix.sh` "
         f"(CONNECTIONS={E['CONNECTIONS']}); raw outputs were in `{os.path.relpath(out_dir, ROOT)}/`.")
L.append("")
busy = [r["busy"] for r in RUNS]
others = [r["other_pct"] for r in RUNS]
flagged = [r for r in RUNS if r["busy"] > BUSY_MAX or r["other_pct"] > OTHER_MAX]
L.append(f"- Server: {E['SERVER_VERSION']}"
         + (" (one worker, the reference settings of servers/nginx/, `return 200` for every path used"
            + (", the journey's API after checking the token, cookie and values it is sent"
               if "journey" in COMMANDS else "") + ")" if E["SERVER"] == "nginx" else "")
         + (f" ({E['SERVER_NOTE']})" if E.get("SERVER_NOTE") else "")
         + f", pinned to CPU {E['SERVER_CPU']}; volley pinned to CPU {E['CLIENT_CPU']}")
L.append(f"- Machine: {E['CPU_MODEL'] or 'unknown CPU'}, {E['NCPU']} CPUs, {E['KERNEL']}; "
         f"busy with other work just before each run: {min(busy)}–{max(busy)} % of all CPUs "
         f"(before each run the script waits up to {E.get('WAIT_QUIET', '?')} s for at most {BUSY_MAX} %); "
         f"other work during the runs: {min(others):.0f}–{max(others):.0f} % of a core (a run above "
         f"{OTHER_MAX} % is repeated, at most {E.get('RETRIES', '?')} times)")
L.append(f"- Version: {E['VOLLEY_VERSION']}")
if flagged:
    L.append(f"- **Warning:** {len(flagged)} of {len(RUNS)} runs had other work on the machine (over {BUSY_MAX} % "
             f"busy just before, or over {OTHER_MAX} % of a core used by neither volley nor the server during "
             "the run); their numbers are noisy.")
L += ["", "```sh", E["CMD_SERVER"]]
L += [COMMANDS[c] for c in ("single", "mix", "plain1k", "check1k", "nocapture", "journey") if c in COMMANDS]
L += [f"# {E['CMD_VOLLEY_NOTE']}", "```", ""]
mix_file = os.path.join(out_dir, "mix.toml")
if os.path.exists(mix_file) and runs("mix"):
    L += ["`mix.toml`:", "", "```toml", read(mix_file).rstrip("\n"), "```", ""]
for name in ("journey.toml", "nocapture.toml"):
    f = os.path.join(out_dir, name)
    if os.path.exists(f) and runs(name.split(".")[0]):
        L += [f"`{name}`:", "", "```toml", read(f).rstrip("\n"), "```", ""]
L.append(f"Closed loop, {E['CONNECTIONS']} keep-alive connections, `-t 1`, {E['DURATION']} per run; every "
         "repetition runs every pair, each pair's order rotating from one repetition to the next. Requests per "
         "client CPU-second = completed requests ÷ (user + sys of the volley process, `/usr/bin/time`); the "
         f"ratio is paired within each repetition (median and range over {REPS}). Above 1 the variant costs "
         "less CPU per request than its baseline.")
L.append("")
L.append("| comparison | baseline | req/s | CPU-s per M req | variant | req/s | CPU-s per M req | "
         "variant ÷ baseline, requests per client CPU-s | target |")
L.append("|---|---|---:|---:|---|---:|---:|---:|---|")
verdicts = []
for name, b, v, target in COMPARISONS:
    rb, rv = runs(b), runs(v)
    if not rb or not rv:
        continue
    ratio = paired(b, v)
    m = med(ratio)
    ok = "met" if m >= target else "NOT met"
    verdicts.append(f"{name} {m:.2f} (target ≥ {target:.2f}: {ok})")
    L.append(f"| {name} | {LABEL[b]} | {med(r['rps'] for r in rb):,.0f} | {med(r['cpu_per_m'] for r in rb):.2f} | "
             f"{LABEL[v]} | {med(r['rps'] for r in rv):,.0f} | {med(r['cpu_per_m'] for r in rv):.2f} | "
             f"**{m:.2f}** ({rng(ratio)}) | ≥ {target:.2f}: {ok} |")
L.append("")
L.append("Where the CPU goes (median µs per completed request; volley's system time is mostly the kernel's "
         "loopback TCP, so what a variant adds shows in user time first):")
L.append("")
L.append("| comparison | baseline user | baseline sys | variant user | variant sys | variant − baseline, user | "
         "variant − baseline, user + sys |")
L.append("|---|---:|---:|---:|---:|---:|---:|")
for name, b, v, _ in COMPARISONS:
    rb, rv = runs(b), runs(v)
    if not rb or not rv:
        continue
    per = lambda rs, k: med(r[k] / r["requests"] * 1e6 for r in rs)
    bu, bs, vu, vs = per(rb, "user"), per(rb, "sys"), per(rv, "user"), per(rv, "sys")
    L.append(f"| {name} | {bu:.2f} | {bs:.2f} | {vu:.2f} | {vs:.2f} | {vu - bu:+.2f} | {vu + vs - bu - bs:+.2f} |")
L.append("")
# What the variants did: the mix's shares, the check's verdicts, the journey's users.
mix_runs = runs("mix")
if mix_runs:
    names = list(mix_runs[0]["shares"])
    shares = ", ".join(f"{n} {100 * med(r['shares'].get(n, 0) for r in mix_runs):.1f} %" for n in names)
    L.append(f"The mix's requests by name (share of those sent, median over runs): {shares}.")
check_runs = runs("check1k")
if check_runs:
    failed = sum(r["failed"] for r in check_runs)
    done = sum(r["requests"] for r in check_runs)
    L.append(f"The checked runs: {failed:,} of {done:,} responses failed a check"
             + (" (every response passed: the check ran on each one and found the needle)." if failed == 0 else "."))
    if E["SERVER"] != "nginx":
        L.append(f"(volley serve's 1 KiB body is all `x`: the needle `{E['NEEDLE']}` is found in the first bytes; "
                 "nginx's body has it at the end, so there the whole body is searched.)")
    else:
        L.append(f"(nginx's 1 KiB body is 1,018 `x` then `{E['NEEDLE']}`: the needle is the last bytes, so each "
                 "response's whole body is searched.)")
journey_runs, plain_runs = runs("journey"), runs("nocapture")
if E["SERVER"] != "nginx":
    L.append("(No journey comparison: it needs nginx, as volley serve answers no JSON, ETag or Set-Cookie for a "
             "journey to capture.)")
if journey_runs:
    J = [r["journey"] or {} for r in journey_runs]
    started = sum(j.get("users_started", 0) for j in J)
    missed = {}
    for j in J:
        for k, n in (j.get("captures_missed") or {}).items():
            missed[k] = missed.get(k, 0) + n
    done = sum(r["requests"] for r in journey_runs)
    statuses = {}
    for r in journey_runs + plain_runs:
        for k, n in r["statuses"].items():
            statuses[k] = statuses.get(k, 0) + n
    names = list(journey_runs[0]["shares"])
    shares = ", ".join(f"{n} {100 * med(r['shares'].get(n, 0) for r in journey_runs):.2f} %" for n in names)
    L.append(f"The journey runs: {started:,} users started (each logged in once), "
             f"{sum(j.get('skipped', 0) for j in J):,} steps skipped, captures missed: "
             + (", ".join(f"{k} {n:,}" for k, n in missed.items()) if missed else "none")
             + f", cookies refused {sum(j.get('cookies_refused', 0) for j in J):,}, values cut "
             f"{sum(j.get('values_cut', 0) for j in J):,}, in {done:,} responses (by step: {shares}). Statuses in "
             "both files' runs: " + ", ".join(f"{k} {n:,}" for k, n in sorted(statuses.items()))
             + (": every request carried the token, session cookie, CSRF token and version the server checks "
                "(nginx answers 401, 403 or 412 otherwise)." if set(statuses) <= {"200"}
                else " (**not all 200**: see the runs below)."))
    if plain_runs:
        per_req = lambda rs, k: med(r[k] / r["requests"] for r in rs)
        L.append(f"Bytes per request: sent {per_req(journey_runs, 'sent_bytes'):.1f} (journey) and "
                 f"{per_req(plain_runs, 'sent_bytes'):.1f} (nocapture), received {per_req(journey_runs, 'received_bytes'):.1f} "
                 f"and {per_req(plain_runs, 'received_bytes'):.1f}: the same requests and responses on the wire.")
L.append("")
L.append("All runs, in the order they ran:")
L.append("")
L.append("| # | rep | run | req/s | requests | user s | sys s | CPU-s per M req | req per CPU-s | p50 | p99 | "
         "failed | server CPU | other CPU | busy before | notes |")
L.append("|---:|---:|---|" + "---:|" * 12 + "---|")
for r in sorted(RUNS, key=lambda r: r["seq"]):
    L.append(f"| {r['seq']} | {r['rep']} | {r['cell']} | {r['rps']:,.0f} | {r['requests']:,} | {r['user']:.2f} | "
             f"{r['sys']:.2f} | {r['cpu_per_m']:.2f} | {r['per_cpu_s']:,.0f} | {us(r['p50'])} | {us(r['p99'])} | "
             f"{r['failed']:,} | {r['server_pct']:.0f} % | {r['other_pct']:.0f} % | {r['busy']} % | "
             f"{'; '.join(r['notes'])} |")
L.append("")

section = "<!-- mix:begin -->\n" + "\n".join(L) + "<!-- mix:end -->"
print(section)
print("[mix] " + "; ".join(verdicts), file=sys.stderr)
if UPDATE_MD == "1":
    text = open(BENCH_MD).read() if os.path.exists(BENCH_MD) else ""
    b, e = "<!-- mix:begin -->", "<!-- mix:end -->"
    if b in text and e in text and text.index(b) < text.index(e):
        text = text[: text.index(b)] + section + text[text.index(e) + len(e):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    open(BENCH_MD, "w").write(text)
    print(f"[mix] wrote the mix section of {BENCH_MD}", file=sys.stderr)
