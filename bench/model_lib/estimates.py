# SPDX-License-Identifier: Apache-2.0
"""smddp's own time estimates (torch's _time_estimator, the library's cost model) against the
measured times of the same calls, from bench/compare runs (compare.json: smddp's rows, one host)
and bench/testbed runs (testbed.json: smddp-torch's rows, run with --cost-model).

rows(paths) -> [{run, collective, ranks, size, time_us, estimate_us}]; table(rows) a markdown
table (measured / estimated us and their ratio per size); plot(rows, path) estimate / measured
against the size, one line per run and collective.
Invariant: reads only what the runs recorded; a row without an estimate is left out.
"""
import json

from compare_lib.common import human_size


def rows(paths):
    out = []
    for path in paths:
        doc = json.load(open(path))
        if "cells" in doc:  # bench/compare
            for c in doc["cells"]:
                if c["backend"] != "smddp" or c["status"] != "ok":
                    continue
                for r in c["rows"]:
                    if r.get("estimate_us") is not None:
                        out.append(dict(run="one host", collective=c["collective"],
                                        ranks=str(c["world"]), size=r["size"],
                                        time_us=r["time_us"], estimate_us=r["estimate_us"]))
        else:  # bench/testbed
            meta = doc["meta"]
            run = f"{meta['hosts']} hosts @ {meta['rate']}"
            ranks = f"{meta['hosts']} x {meta['per_host']}"
            for r in doc["results"].get("smddp-torch", []):
                if r.get("estimate_us") is not None:
                    out.append(dict(run=run, collective=meta.get("collective", "all_reduce"),
                                    ranks=ranks, size=r["size"], time_us=r["time_us"],
                                    estimate_us=r["estimate_us"]))
    return out


def _groups(rs):
    keys = []
    for r in rs:
        k = (r["run"], r["collective"], r["ranks"])
        if k not in keys:
            keys.append(k)
    return keys


def table(rs):
    sizes = sorted({r["size"] for r in rs})
    lines = ["| run | collective | ranks | " + " | ".join(human_size(s) for s in sizes) + " |",
             "|---|---|---|" + "---|" * len(sizes)]
    for key in _groups(rs):
        by = {r["size"]: r for r in rs if (r["run"], r["collective"], r["ranks"]) == key}
        cells = [f"{by[s]['time_us']:.0f} / {by[s]['estimate_us']:.0f} "
                 f"({by[s]['estimate_us'] / by[s]['time_us']:.2f})" if s in by else "-"
                 for s in sizes]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
    ratios = [r["estimate_us"] / r["time_us"] for r in rs]
    lines += ["", f"estimate / measured: {min(ratios):.2f} to {max(ratios):.2f} over "
              f"{len(ratios)} cells"]
    return "\n".join(lines) + "\n"


def plot(rs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key in _groups(rs):
        pts = sorted((r["size"], r["estimate_us"] / r["time_us"]) for r in rs
                     if (r["run"], r["collective"], r["ranks"]) == key)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".",
                label=f"{key[1]}, {key[2]} ({key[0]})")
    for y in (0.5, 1.0, 2.0):
        ax.axhline(y, color="grey" if y != 1.0 else "black", linestyle=":", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_ylim(0.25, 4)
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("estimate / measured time")
    ax.set_title("smddp's time estimates (_time_estimator) against measured calls")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
