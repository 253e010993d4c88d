# SPDX-License-Identifier: Apache-2.0
"""An SMDDP v2 training script, written the way SageMaker's documentation shows for the smddp
backend: `import smdistributed.dataparallel.torch.torch_smddp`, then plain torch.distributed with
backend="smddp" and torch's own DistributedDataParallel; LOCAL_RANK from the environment; rank 0
saves the model to SM_MODEL_DIR. Synthetic data (regression with a known linear teacher), so it
runs offline. It runs unchanged on smddp:

    python -m torch_smddp.launch examples/smddp/train_v2.py --epochs 3

Invariant: data, initial weights and batch order depend only on --seed, so the final model
equals (up to float rounding) the same model trained in one process on the global batches;
tests/python/test_sagemaker_jobs.py checks exactly that.
"""
import argparse
import os

import smdistributed.dataparallel.torch.torch_smddp  # noqa: F401  (registers "smddp")
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def make_model():
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 4))


def make_dataset(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    teacher = torch.randn(16, 4, generator=g)
    return TensorDataset(x, x @ teacher + 0.05 * torch.randn(n, 4, generator=g))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=48, help="global batch size")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--samples", type=int, default=480)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR", "/opt/ml/model"))
    args = p.parse_args()

    dist.init_process_group(backend="smddp")
    world_size, rank = dist.get_world_size(), dist.get_rank()
    local_rank = int(os.getenv("LOCAL_RANK", -1))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else "cpu"

    dataset = make_dataset(args.samples, args.seed)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank)
    loader = DataLoader(dataset, batch_size=args.batch_size // world_size, sampler=sampler)
    torch.manual_seed(args.seed)
    model = DDP(make_model().to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch} loss {loss.item():.5f} (local rank {local_rank})", flush=True)
    if rank == 0:
        os.makedirs(args.model_dir, exist_ok=True)
        torch.save(model.module.state_dict(), os.path.join(args.model_dir, "model.pt"))
        print(f"saved {os.path.join(args.model_dir, 'model.pt')} (world {world_size})",
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
