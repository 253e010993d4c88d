# SPDX-License-Identifier: Apache-2.0
"""The model, data and reference of the keep-training tests: a float64 MLP trained with SGD on
batches that depend only on (step, worker id), so a single process can replay any schedule of
members (which workers took part in which step) and must land on the same parameters.

Invariant: everything is deterministic (fixed seeds, float64, no dropout), so the distributed run
and the replay differ only by summation order (~1e-15).
"""
import torch

LR = 0.05
IN, HIDDEN, OUT, BATCH = 12, 16, 3, 8


def make_model():
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.Tanh(),
                               torch.nn.Linear(HIDDEN, OUT)).double()


def batch(step, worker_id):
    g = torch.Generator().manual_seed(100003 * step + worker_id)
    x = torch.randn(BATCH, IN, generator=g, dtype=torch.float64)
    y = torch.randn(BATCH, OUT, generator=g, dtype=torch.float64)
    return x, y


def flat_params(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def load_flat(model, flat):
    at = 0
    with torch.no_grad():
        for p in model.parameters():
            n = p.numel()
            p.copy_(flat[at:at + n].view_as(p))
            at += n


def local_grad(model, step, worker_id):
    """This worker's gradient for `step`, flattened."""
    model.zero_grad()
    x, y = batch(step, worker_id)
    torch.nn.functional.mse_loss(model(x), y).backward()
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def apply_mean(model, grad_sum, members):
    with torch.no_grad():
        load_flat(model, flat_params(model) - LR * grad_sum / members)


def replay(schedule):
    """The parameters after applying `schedule` ({step: [worker ids]}, steps 0..n-1) in one
    process."""
    model = make_model()
    for step in range(len(schedule)):
        ids = schedule[step]
        total = sum(local_grad(model, step, i) for i in ids)
        apply_mean(model, total, len(ids))
    return flat_params(model)
