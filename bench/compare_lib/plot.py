# SPDX-License-Identifier: Apache-2.0
"""busbw.png for bench/compare: one subplot per (collective, world), busbw against size on log
axes, one colour per backend, solid float32 and dashed bfloat16, the memcpy limit as a grey line.
Barrier (time only) gets a bar chart of its time per backend and world. busy.png (--load): one
subplot per (collective, world), time per call against size on log-log axes, one colour per
backend (first dtype), its CPU time per call dotted beside it; the title names the load.
Invariant: uses the Agg backend (no display needed) and reads only finalized cells.
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"smddp": "tab:blue", "smddp-alloc": "tab:cyan", "gloo": "tab:orange", "mpi": "tab:green",
          "engine": "tab:purple"}
STYLES = {"float32": "-", "bfloat16": "--"}


def _bw_axis(ax, cells, coll, world, memcpy):
    oversubscribed = False  # as each cell recorded it when it ran
    for c in cells:
        if c["collective"] != coll or c["world"] != world or not c["rows"]:
            continue
        xs = [r["size"] for r in c["rows"] if r["busbw_gbps"] > 0]
        ys = [r["busbw_gbps"] for r in c["rows"] if r["busbw_gbps"] > 0]
        ax.plot(xs, ys, STYLES.get(c["dtype"], ":"), color=COLORS.get(c["backend"]), marker=".",
                label=f"{c['backend']} {c['dtype']}")
        oversubscribed = oversubscribed or c.get("oversubscribed", False)
    if memcpy:
        ax.axhline(memcpy, color="grey", linewidth=0.8, linestyle=":", label="memcpy (1 core)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_title(f"{coll}, world {world}" + (" (oversubscribed)" if oversubscribed else ""),
                 fontsize=9)
    ax.set_xlabel("size (B)", fontsize=8)
    ax.set_ylabel("busbw (GB/s)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, which="major", alpha=0.3)


def _barrier_axis(ax, cells, worlds):
    labels, values, colors = [], [], []
    for world in worlds:
        for c in cells:
            if c["collective"] == "barrier" and c["world"] == world and c["rows"] and \
                    c["dtype"] == cells[0]["dtype"]:
                labels.append(f"{c['backend']}\nw{world}")
                values.append(c["rows"][0]["time_us"])
                colors.append(COLORS.get(c["backend"]))
    ax.bar(range(len(values)), values, color=colors)
    ax.set_xticks(range(len(values)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("time (us)", fontsize=8)
    ax.set_title("barrier", fontsize=9)
    ax.tick_params(labelsize=7)


def write_png(path, cells, collectives, worlds, memcpy):
    bw_colls = [c for c in collectives if c != "barrier"]
    ncols = max(len(worlds), 1)
    nrows = len(bw_colls) + (1 if "barrier" in collectives else 0)
    width, height = max(6.0 * ncols, 9.0), 3.6 * nrows + 0.9  # 0.9 in on top for the legend
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False)
    for i, coll in enumerate(bw_colls):
        for j, world in enumerate(worlds):
            _bw_axis(axes[i][j], cells, coll, world, memcpy)
    if "barrier" in collectives:
        _barrier_axis(axes[-1][0], cells, worlds)
        for j in range(1, ncols):
            axes[-1][j].axis("off")
    handles = {}
    for ax in fig.axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles.keys()), loc="upper center",
               ncol=4, fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.9 / height))
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _busy_axis(ax, cells, coll, world, dtype):
    for c in cells:
        if c["collective"] != coll or c["world"] != world or not c["rows"] or (
                c["dtype"] != dtype and coll != "barrier"):  # barrier runs under one dtype
            continue
        rows = [r for r in c["rows"] if r["time_us"]]
        xs = [max(r["size"], 1) for r in rows]  # barrier's one row has size 0
        ax.plot(xs, [r["time_us"] for r in rows], "-", color=COLORS.get(c["backend"]),
                marker=".", label=f"{c['backend']} time")
        cpu = [(x, r["cpu_us"]) for x, r in zip(xs, rows) if r.get("cpu_us")]
        if cpu:
            ax.plot(*zip(*cpu), ":", color=COLORS.get(c["backend"]), label=f"{c['backend']} cpu")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_title(f"{coll}, world {world}, {dtype}", fontsize=9)
    ax.set_xlabel("size (B)", fontsize=8)
    ax.set_ylabel("per call (us)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(True, which="major", alpha=0.3)


def write_busy_png(path, cells, collectives, worlds, load):
    """Time (solid) and CPU time (dotted) per call against size on the busy machine."""
    dtype = next((c["dtype"] for c in cells if c["collective"] != "barrier"), cells[0]["dtype"])
    ncols = max(len(worlds), 1)
    nrows = max(len(collectives), 1)
    width, height = max(6.0 * ncols, 9.0), 3.4 * nrows + 0.9  # 0.9 in on top: title, legend
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False)
    for i, coll in enumerate(collectives):
        for j, world in enumerate(worlds):
            _busy_axis(axes[i][j], cells, coll, world, dtype)
    handles = {}
    for ax in fig.axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.suptitle(f"busy machine: {load['per_core']:g} busy processes per core "
                 f"({load['processes']} in all on {load['cores']} cores)", fontsize=10)
    fig.legend(list(handles.values()), list(handles.keys()), loc="upper center",
               bbox_to_anchor=(0.5, 1 - 0.3 / height), ncol=5, fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.9 / height))
    fig.savefig(path, dpi=90)
    plt.close(fig)
