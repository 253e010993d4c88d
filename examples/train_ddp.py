# SPDX-License-Identifier: Apache-2.0
"""Train a small ResNet-style CNN with DistributedDataParallel over smddp (or gloo) on synthetic,
learnable data; rank 0 prints the loss and throughput of every epoch.

    torchrun --standalone --nproc_per_node=4 --redirects 1 --tee 1 examples/train_ddp.py
    torchrun ... examples/train_ddp.py --backend gloo --epochs 5 --steps 20 --batch 32

Elastic runs (torchrun --max_restarts / --nnodes=MIN:MAX): with --checkpoint PATH rank 0 saves the
model, the optimizer and the epoch to PATH (atomically) after every epoch, and every rank resumes
from it at start when it exists; PATH must be on storage every node sees. At the end rank 0 prints
a sha256 of the final parameters and buffers, so runs can be compared bit for bit. For fault
tests, --fail-once-at-epoch K --fail-marker FILE makes rank --fail-rank (1) exit(1) in the middle
of epoch K unless FILE exists (it creates FILE first), i.e. once per job.

For throughput runs (bench/busy_ddp): --width and --blocks make the model larger (width 256 with
6 blocks gives DDP buckets of several MB, all-reduced while backward still runs), --threads sets
torch's intra-op threads per rank (default 1), and the last line rank 0 prints is
`RESULT {json}`: backend, world, samples/s and mean step time over the epochs after the first
(the warm-up; all epochs when there is one), and the CPU seconds (user + system) of those epochs,
rank 0's and the mean over ranks.

On torch 1.13 + Python 3.11 torchrun needs --redirects/--tee set to 1 or 2: with 0 (the default)
or 3 its Std.from_str returns None (Python 3.11's IntFlag iteration skips NONE and ALL) and the
agent crashes with "'NoneType' object has no attribute 'get'". Newer torch needs neither flag.
Invariant: the initial weights depend only on --seed and each batch only on (seed, epoch, step,
rank), never on how many batches were drawn before, so runs are repeatable, the smddp and gloo
runs are comparable, and a run resumed from a checkpoint ends bit-identical to an uninterrupted one
(same world size).
"""
import argparse
import hashlib
import json
import os
import resource
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(out)))


class SmallResNet(nn.Module):
    def __init__(self, classes=10, width=16, blocks=2):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU())
        rest = [Block(width) for _ in range(max(blocks, 2) - 1)]
        self.layers = nn.Sequential(Block(width), nn.MaxPool2d(2), *rest)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class SyntheticImages:
    """Class c images = a fixed random template of class c + noise: learnable, deterministic."""

    def __init__(self, seed, rank, classes=10, size=16):
        g = torch.Generator().manual_seed(seed)
        self.templates = torch.randn(classes, 3, size, size, generator=g)
        self.seed, self.rank, self.classes = seed, rank, classes

    def batch(self, epoch, step, n):
        # A fresh generator per (seed, epoch, step, rank): resuming at any epoch sees the same data.
        key = (((self.seed * 1_000_003 + epoch) * 1_000_003 + step) * 1_009 + self.rank + 1)
        gen = torch.Generator().manual_seed(key % (1 << 62))
        labels = torch.randint(0, self.classes, (n,), generator=gen)
        noise = torch.randn(n, *self.templates.shape[1:], generator=gen)
        return self.templates[labels] * 0.5 + noise, labels


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="smddp", choices=["smddp", "gloo"])
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="cuda: each rank trains on GPU LOCAL_RANK mod the GPUs visible (on "
                        "smddp, CUDA tensors take NCCL where each rank has a GPU of its own)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps", type=int, default=20, help="steps per epoch")
    p.add_argument("--batch", type=int, default=32, help="per-rank batch size")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--width", type=int, default=16, help="channels of every block")
    p.add_argument("--blocks", type=int, default=2, help="residual blocks (at least 2)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch intra-op threads per rank (default 1: ranks share the cores)")
    p.add_argument("--timeout", type=float, default=None,
                   help="process group timeout in seconds (default: torch's)")
    p.add_argument("--checkpoint", default=None,
                   help="save after every epoch (rank 0) and resume from this file when present")
    p.add_argument("--fail-once-at-epoch", type=int, default=None, metavar="K",
                   help="fault injection: rank --fail-rank exits(1) mid epoch K (1-based) once")
    p.add_argument("--fail-marker", default=None,
                   help="file marking that the injected failure already happened")
    p.add_argument("--fail-rank", type=int, default=1)
    args = p.parse_args()
    if "LOCAL_RANK" not in os.environ:
        p.error("launch with torchrun, e.g. torchrun --standalone --nproc_per_node=2 "
                "--redirects 1 --tee 1 examples/train_ddp.py")
    if args.fail_once_at_epoch is not None and not args.fail_marker:
        p.error("--fail-once-at-epoch needs --fail-marker")
    return args


def save_checkpoint(path, model, opt, epochs_done):
    state = {"epoch": epochs_done, "model": model.state_dict(), "optimizer": opt.state_dict()}
    tmp = f"{path}.tmp.{os.getpid()}"
    torch.save(state, tmp)
    os.replace(tmp, path)  # atomic: a restart never sees half a checkpoint


def load_checkpoint(path, model, opt):
    """Restores model and optimizer from `path` if it exists; returns the epochs already done."""
    if not path or not os.path.exists(path):
        return 0
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    return int(state["epoch"])


def maybe_fail(args, rank, epoch, step):
    if (args.fail_once_at_epoch != epoch + 1 or rank != args.fail_rank
            or step != args.steps // 2 or os.path.exists(args.fail_marker)):
        return
    open(args.fail_marker, "w").close()
    print(f"rank {rank}: injected failure at epoch {epoch + 1} step {step}", file=sys.stderr,
          flush=True)
    os._exit(1)


def state_sha256(module):
    h = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def cpu_seconds():
    """CPU time (user + system) of this rank so far: every thread (intra-op, the backend's)."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def report_result(args, rank, world, timed, device):
    """Rank 0's last line: RESULT {json} of the timed epochs (see the module's docstring)."""
    cpu = torch.tensor([timed["cpu"]], dtype=torch.float64, device=device)
    dist.all_reduce(cpu)
    if rank != 0 or not timed["steps"]:
        return
    result = {"backend": args.backend, "world": world, "threads": args.threads,
              "width": args.width, "blocks": args.blocks, "batch": args.batch,
              "steps": timed["steps"], "seconds": round(timed["seconds"], 4),
              "samples_per_s": round(world * args.batch * timed["steps"] / timed["seconds"], 2),
              "step_ms": round(1e3 * timed["seconds"] / timed["steps"], 3),
              "cpu_s_rank0": round(timed["cpu"], 4), "cpu_s_mean": round(cpu.item() / world, 4)}
    print("RESULT " + json.dumps(result), flush=True)


def main():
    args = parse_args()
    if args.backend == "smddp":
        import torch_smddp  # noqa: F401  (registers the backend)
    torch.set_num_threads(args.threads)  # 1 by default: several ranks share the host's cores
    device = torch.device("cpu")
    if args.device == "cuda":
        local = int(os.environ["LOCAL_RANK"])
        device = torch.device("cuda", local % torch.cuda.device_count())
        torch.cuda.set_device(device)  # before the group: its data plane is chosen from it
    kwargs = {} if args.timeout is None else {"timeout": timedelta(seconds=args.timeout)}
    dist.init_process_group(backend=args.backend, **kwargs)
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(args.seed)
    net = SmallResNet(width=args.width, blocks=args.blocks).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9)
    first = load_checkpoint(args.checkpoint, net, opt)  # before DDP: it broadcasts rank 0's state
    model = DDP(net, device_ids=[device.index] if device.type == "cuda" else None)
    data = SyntheticImages(args.seed, rank)
    if rank == 0:
        print(f"backend={args.backend} world={world} epochs={args.epochs} steps={args.steps} "
              f"batch={args.batch}/rank", flush=True)
        if first:
            restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
            print(f"resumed from {args.checkpoint} after epoch {first} (restart {restart})",
                  flush=True)

    timed = {"seconds": 0.0, "cpu": 0.0, "steps": 0}  # the epochs after the first (RESULT)
    for epoch in range(first, args.epochs):
        cpu0 = cpu_seconds()
        start, total = time.perf_counter(), torch.zeros(1, device=device)
        for step in range(args.steps):
            if args.fail_once_at_epoch is not None:
                maybe_fail(args, rank, epoch, step)
            x, y = (t.to(device) for t in data.batch(epoch, step, args.batch))
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
        dist.all_reduce(total)  # mean loss over ranks and steps
        elapsed = time.perf_counter() - start
        if epoch > first or first == args.epochs - 1:
            timed = {k: v + d for (k, v), d in
                     zip(timed.items(), (elapsed, cpu_seconds() - cpu0, args.steps))}
        if rank == 0:
            mean = total.item() / (world * args.steps)
            rate = world * args.steps * args.batch / elapsed
            print(f"epoch {epoch + 1}/{args.epochs} loss {mean:.4f} samples/s {rate:.1f}",
                  flush=True)
            if args.checkpoint:
                save_checkpoint(args.checkpoint, net, opt, epoch + 1)
    if rank == 0:
        print(f"final state sha256 {state_sha256(net)}", flush=True)
    report_result(args, rank, world, timed, device)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
