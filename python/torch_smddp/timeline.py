# SPDX-License-Identifier: Apache-2.0
"""Who waited for whom: draws the ranks' SMDDP_TRACE files of one communicator as one picture.

    python -m torch_smddp.timeline DIR [-o timeline.png] [--last 40] [--communicator NAME]

Each rank is a row; each collective a bar from the moment the rank called it to its end: light
while the rank waited for the others to call it, dark from the last call to the end. A red mark
shows the rank that called last (the one everyone waited for). It also prints, per rank, how often
it called last and how long the others waited for it. Clocks are aligned on the ends of the
collectives that wait for every rank (one moment for the whole group), so ranks on other hosts
line up too. Standard library only, but matplotlib for the picture (without it, or without -o,
only the summary is printed). Works without torch: python python/torch_smddp/timeline.py DIR.
"""
import argparse
import glob
import json
import os
import statistics
import sys


def load(folder, communicator=None):
    """{communicator: {rank: (other_data, [run events, oldest first])}} of the traces in folder."""
    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        try:
            with open(path) as f:
                data = json.load(f)
            meta = data["otherData"]
            name, rank = meta["communicator"], int(meta["rank"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not an smddp trace
        if communicator is not None and name != communicator:
            continue
        runs = [e for e in data.get("traceEvents", []) if e.get("cat") == "run"]
        runs.sort(key=lambda e: e["args"]["seq"])
        out.setdefault(name, {})[rank] = (meta, runs)
    return out


def align(ranks, last):
    """The last `last` collectives every rank ran, as rows[rank] = [(called, end, name)] in ms on
    the lowest rank's clock."""
    n = min(len(runs) for _, runs in ranks.values())
    take = min(n, last)
    order = sorted(ranks)
    ref = order[0]
    tail = {r: ranks[r][1][len(ranks[r][1]) - take:] for r in order}
    offset = {}
    for r in order:
        diffs = [(e["ts"] + e["dur"]) - (f["ts"] + f["dur"]) for e, f in zip(tail[r], tail[ref])
                 if e["args"].get("waits_for_every_rank")]
        offset[r] = statistics.median(diffs) if diffs else 0.0
    rows = {}
    for r in order:
        rows[r] = [((e["args"]["called_at_us"] - offset[r]) / 1000.0,
                    (e["ts"] + e["dur"] - offset[r]) / 1000.0, e["name"]) for e in tail[r]]
    return rows, take


def summary(rows, take):
    """Lines: per rank, the collectives it called last and the others' mean wait for it."""
    last_count = {r: 0 for r in rows}
    waited = {r: [] for r in rows}
    for i in range(take):
        calls = {r: rows[r][i][0] for r in rows}
        latest = max(calls, key=calls.get)
        last_count[latest] += 1
        others = [calls[latest] - calls[r] for r in rows if r != latest]
        waited[latest].append(statistics.mean(others) if others else 0.0)
    lines = [f"{take} collectives of {len(rows)} ranks"]
    for r in sorted(rows, key=lambda r: -last_count[r]):
        if last_count[r]:
            lines.append(f"rank {r} called last in {last_count[r]} of {take}; the others waited "
                         f"{statistics.mean(waited[r]):.3f} ms for it on average")
    return lines


def draw(rows, title, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranks = sorted(rows)
    t0 = min(rows[r][0][0] for r in ranks)
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.55 * len(ranks)))
    take = len(rows[ranks[0]])
    for i in range(take):
        latest = max(rows[r][i][0] for r in ranks)
        for r in ranks:
            called, end, _ = rows[r][i]
            ax.barh(r, max(latest - called, 0), left=called - t0, height=0.5, color="#f2c14e")
            ax.barh(r, max(end - latest, 0), left=latest - t0, height=0.5, color="#2c6e91")
        last_rank = max(ranks, key=lambda r: rows[r][i][0])
        ax.plot(latest - t0, last_rank, marker="v", color="#c0392b", markersize=6)
    ax.set_yticks(ranks)
    ax.set_yticklabels([f"rank {r}" for r in ranks])
    ax.invert_yaxis()
    ax.set_xlabel("ms (clocks aligned on the collectives' ends)")
    ax.set_title(title)
    from matplotlib.patches import Patch
    from matplotlib.lines import Line2D
    ax.legend(handles=[Patch(color="#f2c14e", label="called, waiting for the others"),
                       Patch(color="#2c6e91", label="running (every rank called)"),
                       Line2D([], [], marker="v", color="#c0392b", linestyle="",
                              label="called last: the rank everyone waited for")],
              loc="upper center", bbox_to_anchor=(0.5, -0.35 if len(ranks) < 4 else -0.2), ncol=3,
              fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m torch_smddp.timeline", description=__doc__.split("\n")[0])
    p.add_argument("folder")
    p.add_argument("-o", "--output", help="PNG to write")
    p.add_argument("--last", type=int, default=40, help="collectives to draw (default 40)")
    p.add_argument("--communicator", help="which communicator's traces (default: the one with most ranks)")
    a = p.parse_args(argv)
    traces = load(a.folder, a.communicator)
    if not traces:
        print(f"no smddp trace in {a.folder} (SMDDP_TRACE=<folder>/<prefix> writes them)")
        return 2
    name = max(traces, key=lambda k: len(traces[k]))
    ranks = traces[name]
    rows, take = align(ranks, max(a.last, 1))
    if take == 0:
        print(f"communicator {name}: no collective ran on every rank")
        return 2
    print(f"communicator {name}: " + "\n".join(summary(rows, take)))
    if a.output:
        draw(rows, f"{name}: the last {take} collectives", a.output)
        print(f"wrote {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
