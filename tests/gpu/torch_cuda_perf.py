# SPDX-License-Identifier: Apache-2.0
"""Timings for torch_cuda_check.py on the GPU machine: busbw of a collective through torch on CUDA
tensors (nccl-tests' bus bandwidth: the all_reduce buffer's bytes times 2(n-1)/n, the all_gather
output's times (n-1)/n, per second), and the device's own copy bandwidth, the yardstick of a
collective that only moves bytes within one GPU."""
import time

import torch
import torch.distributed as dist


def _factor(collective, world):
    return 2 * (world - 1) / world if collective == "all_reduce" else (world - 1) / world


def busbw(rank, world, dev, backend, label, collective, sizes, iters):
    """Rows of {backend (label), collective, bytes, us, busbw_gbps}; `bytes` is the all_reduce
    buffer or the all_gather output. A backend that cannot run here (nccl refuses ranks sharing a
    GPU) gives one row with its error instead."""
    try:
        group = dist.new_group(backend=backend)
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        return [{"backend": label, "collective": collective, "error": repr(e)[:200]}]
    rows = []
    try:
        for nbytes in sizes:
            if collective == "all_reduce":
                x = torch.ones(nbytes // 4, device=dev)
                step = lambda: dist.all_reduce(x, group=group)  # noqa: E731
            else:
                out = torch.empty(nbytes // 4, device=dev)
                mine = torch.ones(nbytes // 4 // world, device=dev)
                step = lambda: dist.all_gather_into_tensor(out, mine, group=group)  # noqa: E731
            for _ in range(2):
                step()
            torch.cuda.synchronize()
            dist.barrier(group=group)
            start = time.perf_counter()
            for _ in range(iters):
                step()
            torch.cuda.synchronize()
            seconds = (time.perf_counter() - start) / iters
            rows.append({"backend": label, "collective": collective, "bytes": nbytes,
                         "us": seconds * 1e6,
                         "busbw_gbps": nbytes / seconds / 1e9 * _factor(collective, world)})
    except Exception as e:  # noqa: BLE001
        rows.append({"backend": label, "collective": collective, "error": repr(e)[:200]})
    dist.destroy_process_group(group)
    return rows


def copy_bandwidth(dev, nbytes=256 << 20, iters=10):
    """GB/s of device-to-device tensor copies (bytes copied, not read + written)."""
    a = torch.empty(nbytes // 4, device=dev)
    b = torch.ones(nbytes // 4, device=dev)
    a.copy_(b)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        a.copy_(b)
    torch.cuda.synchronize()
    return nbytes * iters / (time.perf_counter() - start) / 1e9


def nccl_ratios(label, entry):
    """smddp's NCCL plane against ProcessGroupNCCL in one world: time ratio per (collective,
    size), goal <= 1.05 from 1 MiB."""
    rows = {(r["backend"], r["collective"], r["bytes"]): r for r in entry.get("busbw", [])
            if "us" in r}
    lines = []
    for (backend, collective, nbytes), r in sorted(rows.items()):
        theirs = rows.get(("nccl", collective, nbytes))
        if backend != "smddp-nccl" or theirs is None:
            continue
        ratio = r["us"] / theirs["us"]
        lines.append(f"world {label} {collective} {nbytes >> 20} MiB: smddp-nccl / nccl time "
                     f"{ratio:.3f} (goal 1.05): {'ok' if ratio <= 1.05 else 'ABOVE'}")
    return lines


def bars(worlds):
    """The issue's bars from the worlds' rows: smddp's NCCL plane against ProcessGroupNCCL;
    smddp through CUDA IPC against gloo at >= 16 MiB (same world size, plain run), and
    all_gather at 256 MiB against the copy bandwidth."""
    lines = []
    for label, entry in worlds.items():
        if label.endswith("nccl"):
            lines += nccl_ratios(label, entry)
        if not label.endswith("ipc"):
            continue
        plain = worlds.get(label.removesuffix("ipc"), {})
        gloo = {(r["collective"], r["bytes"]): r for r in plain.get("busbw", [])
                if r.get("backend") == "gloo" and "busbw_gbps" in r}
        copy = plain.get("copy_gbps") or entry.get("copy_gbps")
        for r in entry.get("busbw", []):
            if "busbw_gbps" not in r:
                continue
            g = gloo.get((r["collective"], r["bytes"]))
            if g and r["bytes"] >= 16 << 20:
                ratio = r["busbw_gbps"] / g["busbw_gbps"]
                lines.append(f"world {label} {r['collective']} {r['bytes'] >> 20} MiB: smddp IPC "
                             f"{ratio:.1f}x gloo (bar 5x): {'ok' if ratio >= 5 else 'BELOW'}")
            if copy and r["collective"] == "all_gather" and r["bytes"] == 256 << 20:
                share = r["busbw_gbps"] / copy
                lines.append(f"world {label} all_gather 256 MiB: {100 * share:.0f} % of the copy "
                             f"bandwidth {copy:.0f} GB/s (bar 50 %): "
                             f"{'ok' if share >= 0.5 else 'BELOW'}")
    return lines
