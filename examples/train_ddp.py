"""Train a small ResNet-style CNN with DistributedDataParallel over smddp (or gloo) on synthetic,
learnable data; rank 0 prints the loss and throughput of every epoch.

    torchrun --standalone --nproc_per_node=4 --redirects 1 --tee 1 examples/train_ddp.py
    torchrun ... examples/train_ddp.py --backend gloo --epochs 5 --steps 20 --batch 32

On torch 1.13 + Python 3.11 torchrun needs --redirects/--tee set to 1 or 2: with 0 (the default)
or 3 its Std.from_str returns None (Python 3.11's IntFlag iteration skips NONE and ALL) and the
agent crashes with "'NoneType' object has no attribute 'get'". Newer torch needs neither flag.
Invariant: the data and the initial weights depend only on --seed (and the rank for the data
shard), so runs are repeatable and the smddp and gloo runs are comparable.
"""
import argparse
import os
import time

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
    def __init__(self, classes=10, width=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU())
        self.layers = nn.Sequential(Block(width), nn.MaxPool2d(2), Block(width))
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class SyntheticImages:
    """Class c images = a fixed random template of class c + noise: learnable, deterministic."""

    def __init__(self, seed, rank, classes=10, size=16):
        g = torch.Generator().manual_seed(seed)
        self.templates = torch.randn(classes, 3, size, size, generator=g)
        self.gen = torch.Generator().manual_seed(seed * 1000 + rank + 1)
        self.classes = classes

    def batch(self, n):
        labels = torch.randint(0, self.classes, (n,), generator=self.gen)
        noise = torch.randn(n, *self.templates.shape[1:], generator=self.gen)
        return self.templates[labels] * 0.5 + noise, labels


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="smddp", choices=["smddp", "gloo"])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps", type=int, default=20, help="steps per epoch")
    p.add_argument("--batch", type=int, default=32, help="per-rank batch size")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def main():
    args = parse_args()
    if args.backend == "smddp":
        import torch_smddp  # noqa: F401  (registers the backend)
    torch.set_num_threads(1)  # several ranks share the host's cores
    dist.init_process_group(backend=args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(args.seed)
    model = DDP(SmallResNet())
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    data = SyntheticImages(args.seed, rank)
    if rank == 0:
        print(f"backend={args.backend} world={world} epochs={args.epochs} steps={args.steps} "
              f"batch={args.batch}/rank", flush=True)

    for epoch in range(args.epochs):
        start, total = time.perf_counter(), torch.zeros(1)
        for _ in range(args.steps):
            x, y = data.batch(args.batch)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
        dist.all_reduce(total)  # mean loss over ranks and steps
        elapsed = time.perf_counter() - start
        if rank == 0:
            mean = total.item() / (world * args.steps)
            rate = world * args.steps * args.batch / elapsed
            print(f"epoch {epoch + 1}/{args.epochs} loss {mean:.4f} samples/s {rate:.1f}",
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    if "LOCAL_RANK" not in os.environ:
        raise SystemExit("launch with torchrun, e.g. torchrun --standalone --nproc_per_node=2 "
                         "--redirects 1 --tee 1 examples/train_ddp.py")
    main()
