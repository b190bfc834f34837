#!/usr/bin/env python3
"""bench/capacity_report.py RESULTS_DIR BENCH_MD UPDATE_MD VOLLEY_VERSION COMMAND BUSY

The capacity section of BENCHMARKS.md from a `volley bench` results folder of capacity cells
(bench/capacity.sh over suites/capacity.toml): the ranking (sustainable rate under the SLO,
what limited it, p99 there, closed-loop maximum and the share), the search's steps and wall
time, then each server's latency–throughput curve (one row per rate: achieved req/s, p50,
p99, p99.9, server CPU, verdict). Written between <!-- capacity:begin --> and
<!-- capacity:end --> of BENCH_MD when UPDATE_MD is 1, printed in any case."""
import json
import os
import statistics
import sys


def ms(us):
    return "" if us is None else f"{us / 1000:.2f} ms"


def rate(v, lower=False):
    return "" if v is None else ("≥ " if lower else "") + f"{v:,.0f}"


def curve(c):
    """One row per offered rate (repeated runs: medians), in the order offered."""
    rows = []
    for t in sorted({s["target_rps"] for s in c["steps"]}):
        runs = [s for s in c["steps"] if s["target_rps"] == t]
        med = lambda f: (statistics.median(v for v in map(f, runs) if v is not None)
                         if any(f(s) is not None for s in runs) else None)
        verdicts = ", ".join(s["verdict"] for s in runs)
        cpu = med(lambda s: s.get("server_cpu_pct"))
        rows.append(f"| {t:,.0f} | {rate(med(lambda s: s.get('achieved_rps')))} | "
                    f"{ms(med(lambda s: s['latency_us'].get('p50')))} | {ms(med(lambda s: s['latency_us'].get('p99')))} | "
                    f"{ms(med(lambda s: s['latency_us'].get('p99_9')))} | {'' if cpu is None else f'{cpu:.0f} %'} | {verdicts} |")
    return rows


def main():
    results, md, update, version, command, busy = sys.argv[1:7]
    index = json.load(open(os.path.join(results, "suite.json")))
    env = index["env"]
    head = ["#", "server", "sustainable req/s", "limited by", "p99 at it", "closed-loop req/s (p99)",
            "share", "steps", "wall", "server CPU µs/req at it"]
    table = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    found, curves, slo = [], [], ""
    for row in index["rows"]:
        if row.get("capacity") is None:
            continue
        name = row["server"]
        if row.get("path") is None:
            found.append((None, f"| – | {name} | {row['status']}: {row.get('reason') or ''} | | | | | | | |"))
            continue
        c = json.load(open(os.path.join(results, row["path"])))
        slo = ", ".join(c["slo"])
        best, lim = c.get("max_rate_rps"), c.get("limited_by")
        lower = lim in ("client", "max_rate")
        at = [s for s in c["steps"] if s["target_rps"] == best and s["verdict"] == "pass"]
        p99 = ms(at[-1]["latency_us"]["p99"]) if at else ""
        cpu = at[-1].get("server_cpu_us_per_request") if at else None
        closed = c.get("closed_loop") or {}
        cl = closed.get("throughput_rps")
        cl_s = f"{rate(cl, closed.get('client_saturated'))} ({ms(closed['latency_us'].get('p99'))})" if cl else ""
        share = ""
        if best and cl and not (lower and closed.get("client_saturated")):
            share = ("≥ " if lower else "≤ " if closed.get("client_saturated") else "") + f"{best / cl:.0%}"
        line = (f"| {{rank}} | {name} | {rate(best, lower) or 'none'} | {lim or 'none passed'} | {p99} | {cl_s} | "
                f"{share} | {len(c['steps'])} | {c['wall_s']:.0f} s | {'' if cpu is None else f'{cpu:.1f}'} |")
        found.append((best, line))
        curves += [f"**{name}** ({c.get('repeat_rule', '')}):", "",
                   "| target req/s | achieved req/s | p50 | p99 | p99.9 | server CPU | verdicts |",
                   "|--:|--:|--:|--:|--:|--:|---|", *curve(c), ""]
    found.sort(key=lambda f: -(f[0] or -1))
    for i, (best, line) in enumerate(found):
        table.append(line.replace("{rank}", str(i + 1) if best else "–"))
    png = os.path.join(os.path.dirname(os.path.abspath(__file__)), "capacity.png")
    shot = os.path.join(os.path.dirname(results), "page.png")
    if os.path.exists(shot):
        os.replace(shot, png)
    body = ["## Capacity under an SLO (`volley capacity`, suites/capacity.toml)", "",
            f"`{command}`, {version}; {env.get('cpu_model')}, {env.get('cores')} CPUs, Linux {env.get('kernel')}; "
            f"servers pinned to CPU {env['pinning'].get('server_cpus')}, volley to CPU {env['pinning'].get('client_cpus')}; "
            f"the machine was {busy} % busy before the run. SLO: {slo}. Each server: open-loop steps (corrected latency), a "
            "ramp ×2 from 1,000 req/s and a bisection to 5 %, then its closed-loop maximum over the same 50 connections. "
            "`limited by client` means volley on one core was the limit: the number is a lower bound (≥).", "",
            *table, "",
            "The latency–throughput curve of each server (the steps; repeated rates as medians, their verdicts in order):", "",
            *curves]
    if os.path.exists(png):
        body += ["![The capacity section of the run's report.html: latency and server CPU against throughput]"
                 "(bench/capacity.png)", ""]
    section = "<!-- capacity:begin -->\n" + "\n".join(body) + "<!-- capacity:end -->"
    print(section)
    if update == "1":
        text = open(md).read()
        b, e = "<!-- capacity:begin -->", "<!-- capacity:end -->"
        if b in text and e in text:
            text = text[: text.index(b)] + section + text[text.index(e) + len(e):]
        else:
            text = text.rstrip("\n") + "\n\n" + section + "\n"
        open(md, "w").write(text)


main()
