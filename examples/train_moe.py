# SPDX-License-Identifier: Apache-2.0
"""Train a small mixture-of-experts model with expert parallelism over smddp (or gloo): every rank
holds --experts-per-rank experts of a top-1 routed MoE layer; each step routes its tokens, tells
every rank how many tokens it will get for each of its experts (an all_to_all_single of counts),
sends the tokens there (all_to_all_single with split sizes, differentiable:
torch.distributed.nn.functional), runs the local experts, and sends the results back the same
way. The dense layers (embedding, router, head) are replicated and their gradients averaged with
all_reduce; the experts' gradients come back through the all_to_all's backward.

    torchrun --standalone --nproc_per_node=4 examples/train_moe.py
    torchrun --nnodes=2 --nproc_per_node=2 --node_rank=N --master_addr=HOST0 --master_port=29540 \\
        examples/train_moe.py --compare gloo

--compare gloo trains the same model again over a gloo group in the same job (same seed, same
batches) and prints the largest difference of any parameter between the two runs; the exit status
is 1 when it exceeds --tolerance (relative to the parameter's scale). Rank 0 prints the loss every
--log-every steps and the tokens per second.
Invariant: the initial weights depend only on --seed and each batch only on (seed, step, rank), so
two backends train the same numbers, up to the order of their floating-point sums.
"""
import argparse
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed.nn.functional as dnn
import torch.nn as nn
import torch.nn.functional as F

IN, DIM, HIDDEN, OUT = 16, 32, 64, 4


class Expert(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(DIM, HIDDEN)
        self.down = nn.Linear(HIDDEN, DIM)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class MoEModel(nn.Module):
    """embed -> router (top-1) -> experts spread over the group's ranks -> residual -> head."""

    def __init__(self, group, per_rank, seed):
        super().__init__()
        self.group = group
        self.world = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        self.per_rank = per_rank
        self.experts_total = per_rank * self.world
        torch.manual_seed(seed)  # the dense layers: equal on every rank
        self.embed = nn.Linear(IN, DIM)
        self.router = nn.Linear(DIM, self.experts_total)
        self.head = nn.Linear(DIM, OUT)
        # every expert is drawn from its own seed, so expert e is the same whatever rank holds it
        experts = []
        for e in range(self.rank * per_rank, (self.rank + 1) * per_rank):
            torch.manual_seed(seed * 1000 + 1 + e)
            experts.append(Expert())
        self.experts = nn.ModuleList(experts)

    def dense_parameters(self):
        return [p for m in (self.embed, self.router, self.head) for p in m.parameters()]

    def forward(self, x):
        h = self.embed(x)
        gates = F.softmax(self.router(h), dim=-1)
        weight, expert = gates.max(dim=-1)  # top-1
        order = torch.argsort(expert, stable=True)  # tokens grouped by expert, so by owner rank
        per_expert = torch.bincount(expert, minlength=self.experts_total)
        # how many tokens each rank gets for each of its experts: the split sizes, exchanged once
        got_per_expert = torch.empty_like(per_expert)
        dist.all_to_all_single(got_per_expert, per_expert, group=self.group)
        send_splits = per_expert.view(self.world, self.per_rank).sum(1).tolist()
        recv_splits = got_per_expert.view(self.world, self.per_rank).sum(1).tolist()
        tokens = h[order]
        arrived = tokens.new_empty(sum(recv_splits), DIM)
        arrived = dnn.all_to_all_single(arrived, tokens, recv_splits, send_splits, self.group)
        # arrived: from rank 0 (its tokens for my expert 0, 1, ...), then rank 1, ...
        local = torch.arange(self.per_rank).repeat(self.world)
        local_of = torch.repeat_interleave(local, got_per_expert)
        by_local = torch.argsort(local_of, stable=True)
        grouped, group_of = arrived[by_local], local_of[by_local]  # tokens by local expert
        outputs = [self.experts[j](grouped[group_of == j]) for j in range(self.per_rank)]
        processed = torch.empty_like(arrived)
        processed = processed.index_put((by_local,), torch.cat(outputs))
        back = tokens.new_empty(tokens.shape)
        back = dnn.all_to_all_single(back, processed, send_splits, recv_splits, self.group)
        moe = torch.empty_like(back).index_put((order,), back)
        return self.head(h + weight.unsqueeze(-1) * moe)


def batch(seed, step, rank, tokens):
    g = torch.Generator().manual_seed(seed * 100003 + step * 1009 + rank)
    x = torch.randn(tokens, IN, generator=g)
    return x, torch.tanh(x[:, :OUT] * 2.0 + x[:, OUT:2 * OUT])


def train(group, args, label):
    model = MoEModel(group, args.experts_per_rank, args.seed)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    world, rank = model.world, model.rank
    losses, start = [], time.perf_counter()
    for step in range(args.steps):
        x, y = batch(args.seed, step, rank, args.tokens)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        # the objective is the mean of the ranks' losses: average the dense gradients; an
        # expert's gradient already sums every rank's contribution through the all_to_all
        for p in model.dense_parameters():
            dist.all_reduce(p.grad, group=group)
            p.grad.div_(world)
        for p in model.experts.parameters():
            if p.grad is not None:
                p.grad.div_(world)
        opt.step()
        losses.append(loss.item())
        if rank == 0 and (step + 1) % args.log_every == 0:
            rate = (step + 1) * args.tokens * world / (time.perf_counter() - start)
            print(f"{label} step {step + 1}/{args.steps} loss {loss.item():.5f} "
                  f"tokens/s {rate:.0f}", flush=True)
    return model, losses


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="smddp", choices=["smddp", "gloo"])
    ap.add_argument("--compare", choices=["gloo"], default=None)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--tokens", type=int, default=64, help="tokens per rank and step")
    ap.add_argument("--experts-per-rank", type=int, default=2)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--tolerance", type=float, default=1e-5)
    args = ap.parse_args()
    if args.backend == "smddp":
        import torch_smddp  # noqa: F401  registers the backend
    dist.init_process_group(args.backend, timeout=timedelta(seconds=120))
    rank = dist.get_rank()
    model, losses = train(dist.group.WORLD, args, args.backend)
    if rank == 0:
        print(f"{args.backend}: loss {losses[0]:.5f} -> {losses[-1]:.5f} over {args.steps} steps",
              flush=True)
    status = 0
    if args.compare:
        other, _ = train(dist.new_group(backend=args.compare), args, args.compare)
        worst = 0.0
        for p, q in zip(model.parameters(), other.parameters()):
            scale = max(1.0, q.detach().abs().max().item())
            worst = max(worst, (p.detach() - q.detach()).abs().max().item() / scale)
        worst_t = torch.tensor([worst], dtype=torch.float64)
        dist.all_reduce(worst_t, op=dist.ReduceOp.MAX)
        if rank == 0:
            print(f"{args.backend} vs {args.compare}: largest parameter difference "
                  f"{worst_t.item():.3e} (tolerance {args.tolerance:g})", flush=True)
        status = 0 if worst_t.item() <= args.tolerance else 1
    dist.barrier()
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
