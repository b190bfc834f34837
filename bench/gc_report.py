#!/usr/bin/env python3
"""bench/gc_report.py RESULTS_DIR BENCH_MD UPDATE_MD COMMAND VOLLEY_VERSION BUSY

The GC table of the long-tail experiment (bench/gc.sh) from a `volley bench` results folder:
one row per server and cell (repetitions in order), written between <!-- gc:begin --> and
<!-- gc:end --> of BENCH_MD when UPDATE_MD is 1, printed in any case."""
import json
import os
import sys


def cell_name(row):
    axes = row.get("axes") or {}
    extra = ", ".join(f"{v}" for _, v in sorted(axes.items()))
    return row["scenario"] + (f" ({extra})" if extra else "")


def ms(us):
    return "" if us is None else f"{us / 1000:.2f}"


def fmt(v, digits=2):
    return "" if v is None else f"{v:.{digits}f}"


def row_of(results, row):
    r = json.load(open(os.path.join(results, row["path"])))
    lat = r.get("latency_us") or {}
    server = r.get("server") or {}
    g = server.get("gc")
    base = [row["server"], cell_name(row), str(row.get("rep", 1)),
            f"{r['requests']['completed']:,}", ms(lat.get("p99")), ms(lat.get("p99_99")),
            ms(lat.get("max"))]
    if not g:
        return base + ["none found", "", "", "", "", "", "", ""]
    secs = r.get("elapsed_s") or 0
    alloc_gb = "" if g.get("alloc_bytes") is None else f"{g['alloc_bytes'] / 1e9:.2f}"
    share = g.get("slow_overlap_fraction")
    checked = g.get("slow_requests_checked")
    corr = "" if share is None else f"{share * 100:.0f} % of {checked}"
    pm = g["pause_ms"]
    return base + [
        g["source"] + (f" ({g['unparsed_lines']} lines not understood)" if g["unparsed_lines"] else ""),
        f"{g['pause_count']:,}", fmt(pm["p50"]), fmt(pm["p99"]), fmt(pm["max"]),
        alloc_gb, fmt(g.get("alloc_rate_mb_s"), 1), corr,
    ]


def main():
    results, bench_md, update, command, version, busy = sys.argv[1:7]
    index = json.load(open(os.path.join(results, "suite.json")))
    head = ["server", "cell", "rep", "completed", "p99 ms", "p99.99 ms", "max ms", "GC source",
            "pauses", "pause p50 ms", "pause p99 ms", "pause max ms", "alloc GB", "alloc MB/s",
            "requests ≥ p99.9 overlapping a pause"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    failed = []
    for row in index["rows"]:
        if row.get("status") != "ok" or not row.get("path"):
            failed.append(f"{row['server']} {cell_name(row)}: {row.get('status')} {row.get('reason') or ''}".strip())
            continue
        lines.append("| " + " | ".join(row_of(results, row)) + " |")
    env = index.get("env") or {}
    tools = env.get("tools") or {}
    body = [
        "## GC pauses of the long-tail experiment",
        "",
        f"`{command}`, {version}; machine {busy} % busy with other work before the run; "
        "servers on CPU 1, volley on CPU 0; open loop at 500 req/s over 500 connections "
        "(suites/seeds.toml, scenarios longtail-get and longtail-post). Every server runs "
        "with its GC log on (`runtime` in the suite: JVM -Xlog:gc, Go gctrace, Node "
        "--trace-gc); the JVM servers with -Xmx1G -Xms1G -XX:+UseG1GC except java "
        "(the JDK's HttpServer, JVM defaults). Latency is corrected (from the intended send).",
        "",
        *lines,
        "",
    ]
    if tools:
        body.append("Versions: " + "; ".join(f"{k}: {v}" for k, v in sorted(tools.items())) + ".")
        body.append("")
    if failed:
        body.append("Cells without a result: " + "; ".join(failed) + ".")
        body.append("")
    section = "<!-- gc:begin -->\n" + "\n".join(body) + "<!-- gc:end -->"
    print(section)
    if update == "1":
        text = open(bench_md).read() if os.path.exists(bench_md) else ""
        b, e = "<!-- gc:begin -->", "<!-- gc:end -->"
        if b in text and e in text and text.index(b) < text.index(e):
            text = text[: text.index(b)] + section + text[text.index(e) + len(e):]
        else:
            text = text.rstrip("\n") + "\n\n" + section + "\n"
        open(bench_md, "w").write(text)


if __name__ == "__main__":
    main()
