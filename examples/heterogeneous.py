# SPDX-License-Identifier: Apache-2.0
"""A heterogeneous job (SageMaker heterogeneous clusters): CPU instances prepare batches and
stream them to GPU instances, which train with DDP over their own group. One smddp world spans
both instance groups; `python -m torch_smddp.launch` makes each instance group a torchrun role.

    # on every host of a job with instance groups "data" (CPU) and "train" (GPU):
    python -m torch_smddp.launch examples/heterogeneous.py --data-group data --train-group train

Ranks of --data-group decode and normalize batches (here: synthetic uint8 "images") and send
them with torch.distributed.isend, two steps ahead; trainer j (its rank within --train-group)
gets its batches from data rank j mod (number of data ranks). Trainers run DDP over the
--train-group group and, at the end, trainer 0 prints a sha256 of the parameters and saves them
to SM_MODEL_DIR. Without a --data-group in the job (a plain torchrun on the trainers alone) the
trainers prepare their batches themselves, so the two runs can be compared: they must train the
same model bit for bit (tests/python/test_sagemaker_jobs.py).

Invariant: batch (step, trainer j) depends only on (--seed, step, j); what moves is a prepared
float tensor and its labels, in step order per trainer, so where a batch was prepared cannot
change the model. The tensors are CPU tensors (the test runs the job on CPU instances); smddp
carries CUDA tensors too (docs/TORCH.md), so a GPU version moves the model and batches to the
trainer's device.
"""
import argparse
import hashlib
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import torch_smddp

FEATURES, CLASSES = 64, 8


def prepare_batch(seed, step, trainer, batch):
    """The "preprocessing" the CPU hosts do: decode uint8 samples, normalize, label."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step * 1009 + trainer)
    labels = torch.randint(0, CLASSES, (batch,), generator=g)
    raw = torch.randint(0, 200, (batch, FEATURES), generator=g, dtype=torch.uint8)
    raw[torch.arange(batch), labels * (FEATURES // CLASSES)] = 255
    x = raw.float() / 255.0
    return (x - x.mean(dim=1, keepdim=True)) / x.std(dim=1, keepdim=True), labels


def produce(args, roles, data_ranks, trainers):
    me = data_ranks.index(dist.get_rank())
    mine = [j for j in range(len(trainers)) if j % len(data_ranks) == me]
    in_flight = []  # per step: its sends and their tensors, which must live until done
    for step in range(args.steps):
        step_sends = []
        for j in mine:
            x, y = prepare_batch(args.seed, step, j, args.batch)
            step_sends.append(([dist.isend(x, trainers[j]), dist.isend(y, trainers[j])], x, y))
        in_flight.append(step_sends)
        while len(in_flight) > 2:  # at most two steps ahead of the trainers
            for works, _, _ in in_flight.pop(0):
                for w in works:
                    w.wait()
    for step_sends in in_flight:
        for works, _, _ in step_sends:
            for w in works:
                w.wait()
    print(f"data rank {dist.get_rank()} ({roles.role}) sent {args.steps} steps to trainers "
          f"{[trainers[j] for j in mine]}", flush=True)


def train(args, roles, data_ranks, trainers):
    j = trainers.index(dist.get_rank())
    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, CLASSES))
    group = roles.groups[args.train_group] if args.train_group in roles.groups else None
    ddp = DDP(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    for step in range(args.steps):
        if data_ranks:
            src = data_ranks[j % len(data_ranks)]
            x = torch.empty(args.batch, FEATURES)
            y = torch.empty(args.batch, dtype=torch.int64)
            dist.recv(x, src)
            dist.recv(y, src)
        else:
            x, y = prepare_batch(args.seed, step, j, args.batch)
        opt.zero_grad()
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        if j == 0 and step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    if j == 0:
        h = hashlib.sha256()
        for t in model.state_dict().values():
            h.update(t.detach().contiguous().numpy().tobytes())
        print(f"trained model sha256 {h.hexdigest()} (trainers {len(trainers)}, data ranks "
              f"{len(data_ranks)})", flush=True)
        out = os.environ.get("SM_MODEL_DIR")
        if out:
            os.makedirs(out, exist_ok=True)
            torch.save(model.state_dict(), os.path.join(out, "model.pt"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data-group", default="data")
    p.add_argument("--train-group", default="train")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seed", type=int, default=5)
    args = p.parse_args()
    dist.init_process_group("smddp")
    roles = torch_smddp.roles.role_groups()
    data_ranks = roles.ranks.get(args.data_group, [])
    trainers = roles.ranks.get(args.train_group) or [
        r for r in range(dist.get_world_size()) if r not in data_ranks]
    if roles.role not in (args.data_group, args.train_group) and len(roles.ranks) > 1:
        raise SystemExit(f"rank {dist.get_rank()}: role {roles.role!r} is neither "
                         f"--data-group {args.data_group!r} nor --train-group "
                         f"{args.train_group!r}")
    if dist.get_rank() in data_ranks:
        produce(args, roles, data_ranks, trainers)
    else:
        train(args, roles, data_ranks, trainers)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
