# SPDX-License-Identifier: Apache-2.0
"""Tables for bench/compare: one nccl-tests-style table per backend, a ratio table per
(world, collective, dtype), and a markdown summary for docs/PERF.md.

A cell is one (world, collective, dtype, backend): {"status": "ok" | "n/a" | "skipped" |
"error", "reason", "rounds": [[row, ...], ...], "rows": [median row, ...]}. Ratios are always
"smddp relative to X": busbw ratio = smddp / X (> 1: smddp moves more), time ratio =
smddp / X (< 1: smddp is faster). "smddp/smddp-alloc time": how much faster the same calls run on
tensors smddp allocated (> 1: faster on them).
Invariant: a cell's median rows are computed once (finalize) and everything printed reads them.
"""

from .common import algbw_gbps, busbw_factor, human_size, median_row

# Targets from the issue: torch-level smddp vs the engine's own perf tool.
ENGINE_TARGETS = ((4096, 4096, 1.5), (1 << 20, None, 1.10))  # (from, to, max time ratio)


def finalize(cell, memcpy_gbps, far=()):
    """Median over rounds per size, then algbw/busbw and the fraction of the memcpy limit; also
    time_us_near, the median over the rounds not in `far` (round indices run while the host
    placed the CPUs apart: placement.py), None when every round was."""
    if cell["status"] != "ok":
        cell["rows"] = []
        return cell
    rows = []
    for k, first in enumerate(cell["rounds"][0]):
        m = median_row([rnd[k] for rnd in cell["rounds"]])
        near = [rnd[k] for i, rnd in enumerate(cell["rounds"]) if i not in far]
        m["time_us_near"] = median_row(near)["time_us"]
        alg = algbw_gbps(first["size"], m["time_us"])
        bus = alg * busbw_factor(cell["collective"], cell["world"])
        m.update(size=first["size"], count=first["count"], algbw_gbps=alg, busbw_gbps=bus,
                 pct_memcpy=(100.0 * bus / memcpy_gbps) if memcpy_gbps else None)
        rows.append(m)
    cell["rows"] = rows
    return cell


def wrong_total(cells):
    return sum(r["wrong"] or 0 for c in cells for r in c["rows"])


def backend_table(cell):
    head = (f"# {cell['backend']}  {cell['collective']}  {cell['dtype']}  world {cell['world']}"
            f"{'  (ranks > cores: oversubscribed)' if cell.get('oversubscribed') else ''}")
    if cell["status"] != "ok":
        return head + f"\n#   {cell['status']}: {cell.get('reason', '')}\n"
    lines = [head,
             "#       size         count      type     time   algbw   busbw #wrong  %memcpy"
             "      cpu",
             "#        (B)    (elements)               (us)  (GB/s)  (GB/s)"
             "                   (us)"]
    for r in cell["rows"]:
        pct = f"{r['pct_memcpy']:7.1f}" if r["pct_memcpy"] is not None else "    n/a"
        cpu = f"{r['cpu_us']:7.2f}" if r.get("cpu_us") is not None else "    n/a"
        lines.append(f"{r['size']:12d}  {r['count']:12d}  {cell['dtype']:>8s}  "
                     f"{r['time_us']:7.2f}  {r['algbw_gbps']:6.2f}  {r['busbw_gbps']:6.2f}  "
                     f"{r['wrong']:5d}  {pct}  {cpu}")
    return "\n".join(lines) + "\n"


def _ratio(a, b):
    return f"{a / b:6.2f}" if a and b else "   n/a"


def _engine_flag(size, ratio):
    for lo, hi, limit in ENGINE_TARGETS:
        if size >= lo and (hi is None or size <= hi) and ratio is not None:
            return " ok" if ratio <= limit else f" >{limit:g}x"
    return ""


def ratio_rows(group):
    """Per size: smddp busbw / {gloo, mpi}, smddp time / {gloo, mpi, engine}."""
    by = {c["backend"]: {r["size"]: r for r in c["rows"]} for c in group}
    mine = by.get("smddp", {})
    rows = []
    for size, s in sorted(mine.items()):
        row = {"size": size}
        for other in ("gloo", "mpi", "engine"):
            o = by.get(other, {}).get(size)
            row[f"time_vs_{other}"] = s["time_us"] / o["time_us"] if o and o["time_us"] else None
            bw = o["busbw_gbps"] if o else None
            row[f"busbw_vs_{other}"] = s["busbw_gbps"] / bw if bw else None
        a = by.get("smddp-alloc", {}).get(size)  # the same calls on backend-allocated tensors
        row["alloc_speedup"] = s["time_us"] / a["time_us"] if a and a["time_us"] else None
        rows.append(row)
    return rows


def ratio_table(group):
    c0 = group[0]
    lines = [f"# ratios  {c0['collective']}  {c0['dtype']}  world {c0['world']}  (smddp / X)",
             "#       size   busbw/gloo  busbw/mpi   time/gloo  time/mpi  time/engine"]
    for r in ratio_rows(group):
        def fmt(key):
            v = r[key]
            return f"{v:9.2f}" if v is not None else "      n/a"
        flag = _engine_flag(r["size"], r["time_vs_engine"])
        lines.append(f"{r['size']:12d}  {fmt('busbw_vs_gloo')}  {fmt('busbw_vs_mpi')}  "
                     f"{fmt('time_vs_gloo')}  {fmt('time_vs_mpi')}  {fmt('time_vs_engine')}{flag}")
    return "\n".join(lines) + "\n"


def markdown_group(group, backends, cpu=False):
    """One markdown table: per size, each backend's time and busbw, then the ratios; with `cpu`
    (a busy machine) each backend's CPU time per call after its time."""
    c0 = group[0]
    by = {c["backend"]: c for c in group}
    over = (f" ({c0['world']} ranks on {c0['cores']} cores: oversubscribed)"
            if c0.get("oversubscribed") else "")
    title = f"**{c0['collective']}, {c0['dtype']}, world {c0['world']}**{over}"
    barrier = c0["collective"] == "barrier"
    cols = [f"{b} us" for b in backends] + ([f"{b} cpu us" for b in backends] if cpu else [])
    cols += [] if barrier else [f"{b} GB/s" for b in backends]
    cols += ["smddp/gloo time", "smddp/mpi time", "smddp/engine time"]
    if not barrier:
        cols += ["smddp/gloo busbw", "smddp/mpi busbw", "smddp %memcpy"]
    # which of gloo's configurations (best_of.py) gave its figure at each size
    gloo_config = {r["size"]: r["config"] for r in by["gloo"]["rows"] if "config" in r} \
        if "gloo" in by else {}
    alloc = "smddp-alloc" in by and not barrier
    if alloc:
        cols += ["smddp/smddp-alloc time", "smddp-alloc %memcpy"]
    estimates = any("estimate_us" in r for r in by.get("smddp", {}).get("rows", []))
    if estimates:  # smddp's own time estimate (torch's _time_estimator) against its time
        cols.append("smddp estimate/time")
    if gloo_config:
        cols.append("gloo config")
    lines = [title, "", "| size | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    rows_by = {b: {r["size"]: r for r in by[b]["rows"]} if b in by else {} for b in backends}
    sizes = sorted({s for rows in rows_by.values() for s in rows})
    ratios = {r["size"]: r for r in ratio_rows(group)}
    for size in sizes:
        cells = [_md(rows_by[b].get(size), "time_us", by.get(b)) for b in backends]
        if cpu:
            cells += [_md(rows_by[b].get(size), "cpu_us", by.get(b)) for b in backends]
        if not barrier:
            cells += [_md(rows_by[b].get(size), "busbw_gbps", by.get(b)) for b in backends]
        rt = ratios.get(size, {})
        keys = ["time_vs_gloo", "time_vs_mpi", "time_vs_engine"]
        if not barrier:
            keys += ["busbw_vs_gloo", "busbw_vs_mpi"]
        cells += [f"{rt[k]:.2f}" if rt.get(k) is not None else "n/a" for k in keys]
        if not barrier:
            s = rows_by.get("smddp", {}).get(size)
            cells.append(f"{s['pct_memcpy']:.0f}%" if s and s["pct_memcpy"] is not None else "n/a")
        if alloc:
            a = rows_by.get("smddp-alloc", {}).get(size)
            cells.append(f"{rt['alloc_speedup']:.2f}" if rt.get("alloc_speedup") else "n/a")
            cells.append(f"{a['pct_memcpy']:.0f}%" if a and a["pct_memcpy"] is not None else "n/a")
        if estimates:
            s = rows_by.get("smddp", {}).get(size)
            ok = s and s.get("estimate_us") is not None and s["time_us"]
            cells.append(f"{s['estimate_us'] / s['time_us']:.2f}" if ok else "n/a")
        if gloo_config:
            cells.append(gloo_config.get(size, "n/a"))
        lines.append(f"| {human_size(size) if not barrier else '-'} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _md(row, key, cell):
    if cell is None or cell["status"] != "ok" or row is None or row.get(key) is None:
        return "n/a"
    v = row[key]
    return f"{v:.1f}" if key in ("time_us", "cpu_us") else f"{v:.3f}"
