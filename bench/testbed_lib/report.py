# SPDX-License-Identifier: Apache-2.0
"""bench/testbed's outputs: summary.md (nccl-tests columns per backend, busbw as a multiple of
the link cap, smddp's time ratios to every peer) and testbed.png (busbw / cap against size).
Invariant: reads only measured rows; a backend that failed is named, never left out silently."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from compare_lib.common import algbw_gbps, busbw_factor, human_size  # noqa: E402

COLORS = {"smddp": "tab:blue", "smddp-rxm": "tab:purple", "smddp-flat": "tab:cyan",
          "smddp-torch": "tab:red", "smddp-alloc": "tab:brown", "gloo": "tab:orange", "mpi": "tab:green"}
BACKENDS = ("smddp", "smddp-rxm", "smddp-flat", "smddp-torch", "smddp-alloc", "gloo", "mpi")


BUSBW_TEXT = {"all_reduce": "2(n-1)/n", "broadcast": "1", "all_gather": "(n-1)/n",
              "reduce_scatter": "(n-1)/n", "all_to_all": "(n-1)/n"}


def enrich(results, world, cap_gbps, collective="all_reduce"):
    for rows in results.values():
        for r in rows:
            r["busbw_gbps"] = algbw_gbps(r["size"], r["time_us"]) * busbw_factor(collective,
                                                                                 world)
            r["of_cap"] = r["busbw_gbps"] / cap_gbps


def layout_text(meta):
    per = meta["per_host"]
    if isinstance(per, list):
        return f"{meta['hosts']} hosts of {' + '.join(map(str, per))} ranks"
    return f"{meta['hosts']} hosts x {per} ranks"


def limits(meta):
    """busbw / link cap each kind of algorithm can reach: (hierarchical, flat). A hierarchical
    all_reduce sends 2(H-1)/H x size per host and direction, an all_gather or reduce_scatter
    receives or sends (H-1)/H x size: busbw up to H/(H-1) x (n-1)/n of the cap; a flat ring whose
    order crosses each host boundary once puts its whole per-rank traffic on a link: 1x. A
    broadcast must bring the size into every host: 1x either way. An all_to_all's blocks are all
    distinct: each host sends L x (H-1)/H x size whatever the algorithm, so busbw reaches
    (n-1)/n x H/(H-1) / L of the cap ((n-1) / max L_h (n - L_h) on hosts of L_h ranks)."""
    if meta.get("collective", "all_reduce") == "broadcast":
        return 1.0, 1.0
    world, hosts = meta["world"], meta["hosts"]
    if meta.get("collective") == "all_to_all":  # host h sends L_h (n - L_h) of the n blocks
        per = meta["per_host"]
        counts = per if isinstance(per, list) else [per] * hosts
        bound = (world - 1) / max(c * (world - c) for c in counts)
        return bound, bound
    return (world - 1) / world * hosts / (hosts - 1), 1.0


def summary(results, failed, meta):
    world, cap = meta["world"], meta["cap_gbps"]
    names = [b for b in BACKENDS if b in results]
    coll = meta.get("collective", "all_reduce")
    lines = [f"# {coll} on the testbed: {layout_text(meta)}, "
             f"links capped at {meta['rate']} each way ({cap:.4g} GB/s)", "",
             f"busbw = size / time x {BUSBW_TEXT[coll]} (nccl-tests); `x cap` = busbw / link cap; "
             "ratios are smddp's time / the peer's time (below 1: smddp faster); smddp-torch is "
             "smddp through torch.distributed (smddp-alloc: on tensors from its allocate_tensor), "
             "smddp its engine tool.", ""]
    # through torch against the engine and against gloo; on allocated against ordinary tensors
    ratios = [r for r in ("smddp-torch/smddp", "smddp-torch/gloo", "smddp-alloc/smddp-torch")
              if all(b in results for b in r.split("/"))]
    head = "| size |" + "".join(f" {b} us | {b} x cap | #wrong |" for b in names)
    peers = [b for b in names if b not in ("smddp", "smddp-torch", "smddp-alloc")]
    head += "".join(f" smddp/{b} |" for b in peers) + "".join(f" {r} |" for r in ratios)
    # smddp's own time estimate through torch (_time_estimator) against its measured time
    estimates = any("estimate_us" in r for r in results.get("smddp-torch", []))
    head += " smddp-torch estimate/time |" if estimates else ""
    lines += [head, "|" + "---|" * (1 + 3 * len(names) + len(peers) + len(ratios) + estimates)]
    by = {b: {r["size"]: r for r in results[b]} for b in names}
    for size in sorted({r["size"] for rows in results.values() for r in rows}):
        row = f"| {human_size(size)} |"
        for b in names:
            r = by[b].get(size)
            row += (f" {r['time_us']:.1f} | {r['of_cap']:.2f} | {r['wrong']} |" if r
                    else " - | - | - |")
        for b in peers:
            mine, theirs = by["smddp"].get(size) if "smddp" in by else None, by[b].get(size)
            row += (f" {mine['time_us'] / theirs['time_us']:.2f} |" if mine and theirs
                    else " - |")
        for ratio in ratios:
            a, b = ratio.split("/")
            mine, theirs = by[a].get(size), by[b].get(size)
            row += (f" {mine['time_us'] / theirs['time_us']:.2f} |" if mine and theirs
                    else " - |")
        if estimates:
            t = by["smddp-torch"].get(size)
            row += (f" {t['estimate_us'] / t['time_us']:.2f} |" if t and t.get("estimate_us")
                    else " - |")
        lines.append(row)
    for b, why in failed.items():
        lines += ["", f"**{b} failed**: {why}"]
    return "\n".join(lines) + "\n"


def plot(results, meta, path):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for b, rows in results.items():
        rows = [r for r in rows if r["of_cap"] > 0]
        ax.plot([r["size"] for r in rows], [r["of_cap"] for r in rows], marker=".",
                color=COLORS.get(b), label=b)
    coll = meta.get("collective", "all_reduce")
    hier, flat = limits(meta)
    if hier != flat:
        ax.axhline(hier, color="grey", linestyle=":", linewidth=0.8, label="hierarchical limit")
    ax.axhline(flat, color="black", linestyle=":", linewidth=0.8,
               label="flat ring limit" if hier != flat else "limit")
    ax.set_xscale("log", base=2)
    ax.set_xlabel(f"{coll} size (bytes)")
    ax.set_ylabel("busbw / link cap")
    ax.set_title(f"{layout_text(meta)}, links at {meta['rate']}")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
