# SPDX-License-Identifier: Apache-2.0
"""CUDA tensors through torch_smddp, for the GPU machine (one GPU, several ranks on it), and its
dry run on a CPU machine (--dry-run: CPU tensors on the fake device, SMDDP_DEVICE=fake, with random
stream delays; NCCL and the timings are skipped).

Checks, each rank against closed-form values (#wrong counts elements):
  collectives   all_reduce (sum, avg, max), broadcast, all_gather_into_tensor, all_gather,
                reduce_scatter_tensor, all_to_all_single, reduce, gather, scatter, send/recv;
                float16/bfloat16/float32; sizes
                1 .. 64 MiB and odd counts; 2 and 4 ranks on the GPU
  streams       a long kernel writes the input on the current stream, the collective is posted
                async, wait() is called, another kernel reads the output — no synchronize()
  ddp, fsdp2     20 steps of DDP, 10 of FSDP2, over smddp and over gloo on CUDA give the same
                parameters (within rounding: the reduction orders differ); through CUDA IPC,
                FSDP2's all_gather and reduce_scatter must have taken it
  busbw         all_reduce and all_gather float32 1, 16, 256 MiB through torch: smddp staged,
                gloo, nccl (which refuses ranks sharing a GPU: its error is reported) in the
                plain worlds, smddp through CUDA IPC in the ipc worlds; the device's copy
                bandwidth; the bars (IPC >= 5x gloo at >= 16 MiB, all_gather at 256 MiB >= 50 %
                of the copy bandwidth) checked and printed, not failed on
A world named with "ipc" (e.g. 4ipc) runs with SMDDP_DEVICE_IPC=1: every collective through CUDA
IPC within the host. A world named with "nccl" (e.g. 2nccl) runs on the NCCL plane
(SMDDP_GPU_PLANE=nccl: NCCL takes ranks sharing the GPU with NCCL_MULTI_RANK_GPU_ENABLE=1 from
2.30, and with a host id of their own per rank, NCCL_HOSTID, before): the checks above plus the
plane's name, and busbw of smddp's NCCL plane against torch's ProcessGroupNCCL on the same NCCL
at 1 .. 256 MiB, their time ratio (goal <= 1.05 from 1 MiB). In the dry run the NCCL worlds load
smddp's test NCCL (SMDDP_NCCL_LIBRARY, default $BUILD_DIR/tests/libsmddp_test_nccl.so).
Writes torch_cuda.json and torch_cuda.md under --out after every world (a later world that hangs
leaves the earlier results); exits 1 if anything was wrong.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from torch_cuda_models import ddp_check, fsdp_check
from torch_cuda_perf import bars, busbw, copy_bandwidth

DTYPES = [torch.float16, torch.bfloat16, torch.float32]


def device_of(rank, dry):
    return torch.device("cpu") if dry else torch.device("cuda", 0)


def closed_form_checks(rank, world, dev, sizes):
    """Returns (name, wrong) pairs; values are small integers, exact in every dtype."""
    results = []

    def record(name, got, want):
        results.append((name, int((got.float() != want.float()).sum().item())))

    for dtype in DTYPES:
        for n in sizes:
            x = torch.full((n,), float(rank + 1), dtype=dtype, device=dev)
            x[: min(n, 5)] = torch.arange(min(n, 5), dtype=dtype, device=dev) + rank
            y = x.clone()
            dist.all_reduce(y)
            want = torch.full((n,), float(world * (world + 1) // 2), dtype=dtype, device=dev)
            want[: min(n, 5)] = torch.arange(min(n, 5), dtype=dtype, device=dev) * world + sum(
                range(world))
            record(f"all_reduce sum {dtype} x {n}", y, want)
            z = torch.full((n,), float(2 * rank), dtype=dtype, device=dev)
            dist.all_reduce(z, op=dist.ReduceOp.AVG)
            record(f"all_reduce avg {dtype} x {n}", z, torch.full_like(z, float(world - 1)))
            m = torch.full((n,), float(rank), dtype=dtype, device=dev)
            dist.all_reduce(m, op=dist.ReduceOp.MAX)
            record(f"all_reduce max {dtype} x {n}", m, torch.full_like(m, float(world - 1)))
            b = torch.full((n,), float(rank + 7), dtype=dtype, device=dev)
            dist.broadcast(b, src=world - 1)
            record(f"broadcast {dtype} x {n}", b, torch.full_like(b, float(world + 6)))
            per = max(1, n // world)
            g = torch.empty(per * world, dtype=dtype, device=dev)
            dist.all_gather_into_tensor(g, torch.full((per,), float(rank), dtype=dtype, device=dev))
            record(f"all_gather {dtype} x {per}", g,
                   torch.arange(world, device=dev).repeat_interleave(per).to(dtype))
            rs = torch.empty(per, dtype=dtype, device=dev)
            dist.reduce_scatter_tensor(rs, torch.ones(per * world, dtype=dtype, device=dev))
            record(f"reduce_scatter {dtype} x {per}", rs, torch.full_like(rs, float(world)))
            a = torch.full((per * world,), float(rank), dtype=dtype, device=dev)
            out = torch.empty_like(a)
            dist.all_to_all_single(out, a)
            record(f"all_to_all {dtype} x {per}", out,
                   torch.arange(world, device=dev).repeat_interleave(per).to(dtype))
            mine = torch.full((per,), float(rank), dtype=dtype, device=dev)
            outs = [torch.empty(per, dtype=dtype, device=dev) for _ in range(world)]
            dist.all_gather(outs, mine)
            for r, o in enumerate(outs):
                record(f"all_gather list {dtype} x {per} from {r}", o, torch.full_like(o, float(r)))
            red = torch.full((per,), float(rank + 1), dtype=dtype, device=dev)
            dist.reduce(red, dst=0)
            if rank == 0:
                record(f"reduce {dtype} x {per}", red,
                       torch.full_like(red, float(world * (world + 1) // 2)))
            gl = [torch.empty(per, dtype=dtype, device=dev) for _ in range(world)] if rank == 0 \
                else None
            dist.gather(mine, gather_list=gl, dst=0)
            if rank == 0:
                for r, o in enumerate(gl):
                    record(f"gather {dtype} x {per} from {r}", o, torch.full_like(o, float(r)))
            sl = [torch.full((per,), float(10 + r), dtype=dtype, device=dev)
                  for r in range(world)] if rank == world - 1 else None
            sc = torch.empty(per, dtype=dtype, device=dev)
            dist.scatter(sc, scatter_list=sl, src=world - 1)
            record(f"scatter {dtype} x {per}", sc, torch.full_like(sc, float(10 + rank)))
            got = torch.empty(per, dtype=dtype, device=dev)
            reqs = [dist.isend(mine, (rank + 1) % world), dist.irecv(got, (rank - 1) % world)]
            for q in reqs:
                q.wait()
            record(f"send/recv {dtype} x {per}", got,
                   torch.full_like(got, float((rank - 1) % world)))
    return results


def stream_check(rank, world, dev, dry):
    """Input written by a slow kernel, collective async, wait(), output read by a kernel."""
    n = 1 << 20
    x = torch.zeros(n, device=dev)
    if not dry:
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time before the write below runs
    x.fill_(float(rank + 1))
    work = dist.all_reduce(x, async_op=True)
    work.wait()  # the current stream waits; the host does not
    y = x * 2  # a kernel on the current stream, after the result
    want = float(world * (world + 1))
    return [("stream order: slow producer, async, wait, consumer",
             int((y != want).sum().item()))]


def worker(rank, world, init, dry, out_queue):
    try:
        import torch_smddp
        dev = device_of(rank, dry)
        on_nccl = os.environ.get("SMDDP_GPU_PLANE") == "nccl"
        if on_nccl and not dry and torch.cuda.nccl.version() < (2, 30, 0):
            os.environ["NCCL_HOSTID"] = f"smddp-check-rank-{rank}"  # one "host" per rank
        dist.init_process_group("smddp", init_method=init, rank=rank, world_size=world)
        plane = torch_smddp.backend_of().data_plane
        want_plane = os.environ.get("SMDDP_GPU_PLANE", "auto")
        sizes = [1, 1023, 262_147] + ([] if dry else [1 << 20, 16 << 20])
        checks = [(f"data plane {plane} (want {want_plane})", int(plane != want_plane))]
        checks += closed_form_checks(rank, world, dev, sizes)
        checks += stream_check(rank, world, dev, dry)
        checks += ddp_check(rank, world, dev)
        checks += fsdp_check(rank, world, dev)
        rows, copy_gbps = [], None
        if not dry:
            if rank == 0:
                copy_gbps = copy_bandwidth(dev)
            dist.barrier()
            sizes = [1 << 20, 16 << 20, 256 << 20]
            ipc = os.environ.get("SMDDP_DEVICE_IPC") == "1"  # the others ran in the plain world
            backends = [("smddp", "smddp-ipc")] if ipc else [
                ("smddp", "smddp"), ("gloo", "gloo"), ("nccl", "nccl")]
            if on_nccl:  # smddp's NCCL plane against ProcessGroupNCCL, the same library
                sizes = [1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20]
                backends = [("smddp", "smddp-nccl"), ("nccl", "nccl")]
            for collective in ("all_reduce", "all_gather"):
                for backend, label in backends:
                    rows += busbw(rank, world, dev, backend, label, collective, sizes, iters=5)
        dist.destroy_process_group()
        out_queue.put((rank, checks, {"busbw": rows, "copy_gbps": copy_gbps}, None))
    except BaseException as e:  # report, never hang the parent
        import traceback
        out_queue.put((rank, [], {}, f"{e!r}\n{traceback.format_exc()}"))


def run_world(world, label, dry, timeout):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    init = f"file:///tmp/smddp-torch-cuda-{os.getpid()}-{label}"  # a fresh store for each world
    procs = [ctx.Process(target=worker, args=(r, world, init, dry, queue)) for r in range(world)]
    for p in procs:
        p.start()
    results, deadline = {}, time.monotonic() + timeout
    while len(results) < world and time.monotonic() < deadline:
        try:
            rank, checks, rows, error = queue.get(timeout=max(0.1, deadline - time.monotonic()))
            results[rank] = (checks, rows, error)
        except Exception:
            break
    for p in procs:
        p.join(5)
        if p.is_alive():
            p.kill()
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--worlds", default=None,
                    help="comma-separated; 'ipc' after the size turns CUDA IPC on, 'nccl' "
                         "the NCCL plane (default 2nccl,4nccl,2,2ipc,4,4ipc; dry run: "
                         "2,2ipc,2nccl)")
    ap.add_argument("--out", default=".")
    ap.add_argument("--timeout", type=float, default=240)
    args = ap.parse_args()
    if args.dry_run:
        os.environ["SMDDP_DEVICE"] = "fake"
        os.environ.setdefault("SMDDP_FAKE_DEVICE_DELAY_US", "50")
        os.environ.setdefault("SMDDP_NCCL_LIBRARY", os.path.join(
            os.environ.get("BUILD_DIR", "build"), "tests", "libsmddp_test_nccl.so"))
    else:
        os.environ.setdefault("NCCL_MULTI_RANK_GPU_ENABLE", "1")
        os.environ.setdefault("NCCL_MAX_CTAS", "1")  # several ranks' kernels on one GPU progress
    worlds = (args.worlds or ("2,2ipc,2nccl" if args.dry_run else
                              "2nccl,4nccl,2,2ipc,4,4ipc")).split(",")
    report = {"torch": torch.__version__, "dry_run": args.dry_run, "worlds": {}}
    if not args.dry_run:
        report["device"] = torch.cuda.get_device_name(0)
        report["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
    failed = False
    lines = []
    os.makedirs(args.out, exist_ok=True)
    for label in worlds:
        world = int(label.removesuffix("ipc").removesuffix("nccl"))
        os.environ["SMDDP_DEVICE_IPC"] = "1" if label.endswith("ipc") else "0"
        os.environ["SMDDP_GPU_PLANE"] = "nccl" if label.endswith("nccl") else "smddp"
        results = run_world(world, label, args.dry_run, args.timeout)
        entry = {"checks": {}, "busbw": [], "errors": {}}
        for rank in range(world):
            if rank not in results:
                entry["errors"][rank] = "did not report within the timeout"
                continue
            checks, rows, error = results[rank]
            if error:
                entry["errors"][rank] = error
            for name, wrong in checks:
                entry["checks"][name] = entry["checks"].get(name, 0) + wrong
            if rank == 0:
                entry["busbw"] = rows.get("busbw", [])
                entry["copy_gbps"] = rows.get("copy_gbps")
        bad = {k: v for k, v in entry["checks"].items() if v}
        failed = failed or bool(bad) or bool(entry["errors"]) or not entry["checks"]
        first = len(lines)
        lines.append(f"world {label}: {len(entry['checks'])} checks, #wrong "
                     f"{sum(entry['checks'].values())}, errors {len(entry['errors'])}")
        for k, v in bad.items():
            lines.append(f"  WRONG {k}: {v}")
        for rank, error in entry["errors"].items():
            lines.append(f"  rank {rank}: {error.splitlines()[0]}")
        if entry.get("copy_gbps"):
            lines.append(f"  device copy bandwidth {entry['copy_gbps']:.0f} GB/s (256 MiB)")
        for row in entry["busbw"]:
            if "error" in row:
                lines.append(f"  {row['backend']:9s} {row['collective']}: {row['error']}")
                continue
            lines.append(f"  {row['backend']:9s} {row['collective']:10s} {row['bytes'] >> 20:3d} "
                         f"MiB  {row['us']:10.1f} us  busbw {row['busbw_gbps']:7.2f} GB/s")
        report["worlds"][label] = entry
        with open(os.path.join(args.out, "torch_cuda.json"), "w") as f:
            json.dump(report, f, indent=1, default=str)
        with open(os.path.join(args.out, "torch_cuda.md"), "w") as f:
            f.write("\n".join(lines) + "\n")
        print("\n".join(lines[first:]), flush=True)
    summary = bars(report["worlds"])
    if summary:
        lines += ["bars:"] + ["  " + x for x in summary]
        print("\n".join(lines[-len(summary) - 1:]), flush=True)
        with open(os.path.join(args.out, "torch_cuda.md"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
