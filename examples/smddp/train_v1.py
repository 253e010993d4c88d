# SPDX-License-Identifier: Apache-2.0
"""An SMDDP v1 training script, written the way SageMaker's "Modify a PyTorch training script to
use SageMaker data parallel" guide shows (its MNIST example, on synthetic 28x28 images so it runs
offline): smdistributed's own `distributed` API and DistributedDataParallel, a DistributedSampler
with num_replicas/rank from that API, Adadelta + StepLR, the model saved by rank 0 to
SM_MODEL_DIR. It runs unchanged on smddp:

    python -m torch_smddp.launch examples/smddp/train_v1.py --epochs 2

Invariant: data, initial weights and batch order depend only on --seed, so the final model
equals (up to float rounding) the same model trained in one process on the global batches;
tests/python/test_sagemaker_jobs.py checks exactly that.
"""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR

# Import distributed data parallel library PyTorch API
import smdistributed.dataparallel.torch.distributed as dist

# Import distributed data parallel library PyTorch DDP
from smdistributed.dataparallel.torch.parallel.distributed import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.fc1 = nn.Linear(8 * 13 * 13, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return F.log_softmax(self.fc2(x), dim=1)


def synthetic_mnist(n, seed):
    """n images whose label is recoverable from them (a bright row per class), plus noise."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (n,), generator=g)
    images = torch.rand(n, 1, 28, 28, generator=g) * 0.3
    images[torch.arange(n), 0, 2 + 2 * labels, :] += 1.0
    return torch.utils.data.TensorDataset(images, labels)


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--batch-size", type=int, default=64, help="global batch size")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=1.0)
    p.add_argument("--gamma", type=float, default=0.7)
    p.add_argument("--samples", type=int, default=512)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--model-dir", default=os.environ.get("SM_MODEL_DIR", "/opt/ml/model"))
    return p.parse_args(argv)


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        # the mean loss over all ranks, for the log (SMDDP's AVERAGE reduction)
        avg = loss.detach().clone()
        dist.all_reduce(avg, op=dist.ReduceOp.AVERAGE)
        if dist.get_rank() == 0 and batch_idx % 4 == 0:
            print(f"epoch {epoch} batch {batch_idx} loss {avg.item():.4f}", flush=True)


def main():
    args = parse_args()
    # Initialize distributed data parallel library
    dist.init_process_group()
    # Scale batch size by world size
    batch_size = max(args.batch_size // dist.get_world_size(), 1)
    device = torch.device("cuda", dist.get_local_rank()) if torch.cuda.is_available() \
        else torch.device("cpu")
    if device.type == "cuda":
        # Pin each GPU to a single distributed data parallel library process.
        torch.cuda.set_device(dist.get_local_rank())

    train_dataset = synthetic_mnist(args.samples, args.seed)
    # Set num_replicas and rank in DistributedSampler
    train_sampler = torch.utils.data.distributed.DistributedSampler(
        train_dataset, num_replicas=dist.get_world_size(), rank=dist.get_rank())
    train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=batch_size,
                                               shuffle=False, sampler=train_sampler)

    torch.manual_seed(args.seed)
    # Wrap the PyTorch model with distributed data parallel library's DDP
    model = DDP(Net().to(device), broadcast_buffers=False)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        scheduler.step()
    # Save model on master node.
    if dist.get_rank() == 0:
        os.makedirs(args.model_dir, exist_ok=True)
        torch.save(model.module.state_dict(), os.path.join(args.model_dir, "model.pt"))
        print(f"saved {os.path.join(args.model_dir, 'model.pt')} (world "
              f"{dist.get_world_size()}, local size {dist.get_local_size()})", flush=True)


if __name__ == "__main__":
    main()
