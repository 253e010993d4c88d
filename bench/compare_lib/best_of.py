# SPDX-License-Identifier: Apache-2.0
"""gloo in the configuration that is best for it. Every rank of every backend is pinned to one
CPU (common.bind_argv), which suits smddp, the engine tools and Open MPI (their ranks run one
thread at a time); gloo runs its collectives on worker threads beside the caller, and pinned
they share the caller's CPU. So gloo runs twice, pinned ("gloo_pinned") and unpinned
("gloo_unpinned", placement left to the scheduler), and the "gloo" figures that every ratio
reads are, per size, the faster of the two medians, each row saying which configuration it came
from ("config").

Invariant: merge() leaves every measured cell as it was (renamed, not changed) and adds one
"gloo" cell per (world, collective, dtype); a configuration that failed or was not run simply
does not compete, and when neither ran the "gloo" cell carries the pinned cell's status.
"""

PINNED, UNPINNED = "gloo_pinned", "gloo_unpinned"
CONFIG = {PINNED: "pinned", UNPINNED: "unpinned"}


def run_order(backends, unpinned):
    """The runners of a world in rotation order: "gloo" (pinned) followed by its unpinned run."""
    order = []
    for b in backends:
        order.append(b)
        if b == "gloo" and unpinned:
            order.append(UNPINNED)
    return order


def _best_rows(cells):
    by_size = {}
    for cell in cells:
        for row in cell["rows"]:
            mine = dict(row, config=CONFIG[cell["backend"]])
            best = by_size.get(row["size"])
            if best is None or mine["time_us"] < best["time_us"]:
                by_size[row["size"]] = mine
    return [by_size[s] for s in sorted(by_size)]


def merge(cells):
    """cells: finalized cells, gloo's pinned run under backend "gloo". Returns the list with
    that run renamed gloo_pinned and a "gloo" cell of the better figures added."""
    out, groups = [], {}
    for cell in cells:
        if cell["backend"] == "gloo":
            cell = dict(cell, backend=PINNED)
        if cell["backend"] in CONFIG:
            groups.setdefault((cell["world"], cell["collective"], cell["dtype"]), []).append(cell)
        out.append(cell)
    for (world, coll, dtype), runs in groups.items():
        ok = [c for c in runs if c["status"] == "ok" and c["rows"]]
        base = next((c for c in runs if c["backend"] == PINNED), runs[0])
        best = dict(base, backend="gloo", rounds=[], placement_ns=[])
        if ok:
            best.update(status="ok", reason="", rows=_best_rows(ok),
                        configs=sorted(CONFIG[c["backend"]] for c in ok))
        out.append(best)
    return out


def config_counts(cell):
    """How many sizes each configuration won: {"pinned": n, "unpinned": m}."""
    counts = {}
    for row in cell.get("rows", []):
        if "config" in row:
            counts[row["config"]] = counts.get(row["config"], 0) + 1
    return counts
