# SPDX-License-Identifier: Apache-2.0
"""Keep training through a lost worker (torch >= 2.15): one command shows it on one machine.

    python examples/keep_training.py                      # smddp, 4 workers, worker 2 killed
    python examples/keep_training.py --device cuda        # on GPUs: smddp's NCCL plane
    python examples/keep_training.py --backend gloo       # the same protocol on gloo

This script plays the cluster: it serves the store (which must outlive the workers: in a real
job torchrun's agent store does), starts --workers processes, SIGKILLs one of them at step
--kill-at and starts a replacement. The workers train a small model with a per-step gradient
all_reduce on a group made with init_process_group(..., enable_reconfigure=True). When a
collective fails, the survivors agree on who is left through the store
(torch_smddp.elastic.StoreQuorum), reconfigure the same group to that generation
(dist._reconfigure) and redo the step; rank 0 checks each step whether a replacement waits and
the members then admit it, rank 0 broadcasting the parameters (one still starting when the
last step is done is waited for and admitted then). Each worker prints what
happened; at the end every worker prints a checksum of its parameters (all equal).
With --device cuda each worker trains on GPU (worker mod the GPUs visible), set before the group
is made: where every worker has a GPU of its own the group's collectives run on NCCL (smddp's
NCCL plane, backend_of(group).data_plane says so) and the lost worker is still named and
reconfigured around; workers sharing a GPU take smddp's own plane.
"""
import argparse
import hashlib
import multiprocessing as mp
import os
import signal
import socket
import time
from datetime import timedelta

import torch
import torch.distributed as dist


def worker(wid, args, port, joining):
    import torch_smddp  # registers "smddp"
    from torch_smddp.elastic import StoreQuorum

    device = torch.device("cpu")
    if args.device == "cuda":
        device = torch.device("cuda", wid % torch.cuda.device_count())
        torch.cuda.set_device(device)  # before the group: its data plane is chosen from it
    store = dist.TCPStore("127.0.0.1", port, is_master=False, wait_for_workers=False)
    dist.init_process_group(args.backend, store=dist.PrefixStore("pg", store), rank=wid,
                            world_size=1024, timeout=timedelta(seconds=30),
                            enable_reconfigure=True)
    quorum = StoreQuorum(dist.PrefixStore("quorum", store))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(),
                                torch.nn.Linear(32, 1)).to(device)
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=0.05)
    step, before = 0, None  # before: the parameters at the start of the step being run

    def enter(gen, why):
        nonlocal step
        # rank 0 sends where to go on from (the step being redone) and the parameters
        state = torch.cat([torch.tensor([float(step)], device=device)] +
                          [p.detach().reshape(-1) for p in params])
        if gen.rank == 0 and before is not None and why == "recovered":
            state[1:] = before
        dist.broadcast(state, src=0)
        step = int(state[0])
        torch.nn.utils.vector_to_parameters(state[1:], params)
        plane = ""
        if args.backend == "smddp" and device.type == "cuda":
            plane = f" ({torch_smddp.backend_of().data_plane} plane)"
        print(f"worker {wid}: {why}: rank {gen.rank} of {gen.size} from step {step}{plane}",
              flush=True)

    if joining:
        enter(quorum.join(info={"id": wid}), "joined")
    else:
        enter(quorum.reconfigure(info={"rank": wid}, expected=args.workers), "started")
    while step < args.steps:
        before = torch.nn.utils.parameters_to_vector(params).detach().clone()
        g = torch.Generator().manual_seed(step * 1000 + wid)
        x = torch.randn(32, 16, generator=g).to(device)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True)).backward()
        grads = torch.cat([p.grad.reshape(-1) for p in params] +
                          [torch.tensor([float(quorum.waiting()) if dist.get_rank() == 0 else 0],
                                        device=device)])
        if wid == 0 and step == args.kill_at:
            store.set("kill", "now")  # the cluster kills --victim now
        try:
            dist.all_reduce(grads)
        except RuntimeError as e:
            print(f"worker {wid}: step {step} failed: {str(e).splitlines()[0][:120]}", flush=True)
            start = time.monotonic()
            enter(quorum.reconfigure(info={"rank": dist.get_rank()}), "recovered")
            print(f"worker {wid}: back in {time.monotonic() - start:.2f} s", flush=True)
            continue
        offset = 0
        for p in params:
            p.grad.copy_(grads[offset:offset + p.numel()].view_as(p) / dist.get_world_size())
            offset += p.numel()
        optimizer.step()
        step += 1
        time.sleep(args.step_s)  # a real step computes meanwhile
        if grads[-1] > 0:  # a replacement waits: admit it
            enter(quorum.reconfigure(info={"rank": dist.get_rank()},
                                     expected=dist.get_world_size()), "admitted a replacement")
    # The end of the job: a replacement the cluster started may still be on its way (a process
    # takes seconds to start); the members wait for it (bounded) and admit it, so it ends with
    # them instead of waiting for a generation that never comes.
    while True:
        owed = 0
        if dist.get_rank() == 0:
            started, deadline = int(store.add("replacements", 0)), time.monotonic() + 60
            while (started > quorum.admitted() and quorum.waiting() == 0
                   and time.monotonic() < deadline):
                time.sleep(0.05)
            owed = quorum.waiting()
        flag = torch.tensor([float(owed)], device=device)
        dist.broadcast(flag, src=0)
        if flag[0] == 0:
            break
        enter(quorum.reconfigure(info={"rank": dist.get_rank()}, expected=dist.get_world_size()),
              "admitted a replacement")
    digest = hashlib.sha256(torch.nn.utils.parameters_to_vector(params).detach().cpu().numpy()
                            .tobytes()).hexdigest()[:16]
    print(f"worker {wid}: done at step {step}, parameters {digest}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="smddp")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--kill-at", type=int, default=10)
    ap.add_argument("--step-s", type=float, default=0.15, help="seconds a step takes")
    ap.add_argument("--victim", type=int, default=2)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="where the workers train (cuda: a GPU each, worker mod the GPUs)")
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store = dist.TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=worker, args=(w, args, port, False)) for w in range(args.workers)]
    for p in procs:
        p.start()
    store.wait(["kill"], timedelta(seconds=120))
    os.kill(procs[args.victim].pid, signal.SIGKILL)
    print(f"cluster: killed worker {args.victim}; starting a replacement", flush=True)
    store.add("replacements", 1)  # the members wait for it at the end if it comes late
    procs.append(ctx.Process(target=worker, args=(args.workers, args, port, True)))
    procs[-1].start()
    for p in procs:
        p.join(180)
    bad = [i for i, p in enumerate(procs) if i != args.victim and p.exitcode != 0]
    raise SystemExit(f"workers {bad} failed" if bad else 0)


if __name__ == "__main__":
    main()
