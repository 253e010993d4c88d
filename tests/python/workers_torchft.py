# SPDX-License-Identifier: Apache-2.0
"""One replica group (one process) of test_torchft.py: torchft's fault-tolerant DDP (Manager,
DistributedDataParallel, OptimizerWrapper) over a native smddp group created in the
reconfigure regime -- torchft's lighthouse forms each quorum and hands the members' smddp
reconfigure handles to dist.ProcessGroup.reconfigure; healing replicas get the state through
torchft's own checkpoint transport. The replica that the test names kills itself (SIGKILL) at
a step; the one that replaces it heals and trains on. Writes its final state dict to <out>.
"""
import os
import signal
from datetime import timedelta

import torch
import torch.distributed as dist


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(),
                                          torch.nn.Linear(8, 4))

    def forward(self, x):
        return self.layers(x)


def native_group(store_port, replica_id, replicas):
    """A torch ProcessGroup whose only backend is smddp, created without a communicator."""
    import torch_smddp

    store = dist.TCPStore("localhost", store_port, is_master=False, wait_for_workers=False)
    store = dist.PrefixStore("native", store)
    pg = dist.ProcessGroup(store, replica_id, replicas)
    backend = torch_smddp.ProcessGroupSmddp(store, replica_id, replicas, 30.0, "smddp.torchft",
                                            reconfigure=True)
    custom = dist.ProcessGroup.BackendType.CUSTOM
    pg._set_default_backend(custom)
    pg._register_backend(torch.device("cpu"), custom, backend)
    return pg


def replica(replica_id, replicas, lighthouse, native_port, steps, die_at, out):
    from torchft import DistributedDataParallel, Manager
    from torchft.optim import OptimizerWrapper

    pg = native_group(native_port, replica_id, replicas)
    group_store = dist.TCPStore("localhost", 0, is_master=True, wait_for_workers=False)
    torch.manual_seed(42)
    model = Model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def state_dict():
        return {"model": model.state_dict(), "optim": optimizer.state_dict()}

    def load_state_dict(state):
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optim"])

    manager = Manager(pg=pg, min_replica_size=replicas, load_state_dict=load_state_dict,
                      state_dict=state_dict, replica_id=str(replica_id), store_addr="localhost",
                      store_port=group_store.port, rank=0, world_size=1,
                      lighthouse_addr=lighthouse, timeout=timedelta(seconds=30),
                      quorum_timeout=timedelta(seconds=60), use_async_quorum=False)
    ddp = DistributedDataParallel(manager, model)
    opt = OptimizerWrapper(manager, optimizer)
    generator = torch.Generator().manual_seed(1000 + replica_id)
    while manager.current_step() < steps:
        if manager.current_step() == die_at:
            os.kill(os.getpid(), signal.SIGKILL)
        opt.zero_grad()
        x = torch.rand(4, 3, generator=generator)
        y = torch.randint(4, (4,), generator=generator)
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()  # commits only when every participant's collectives succeeded
    torch.save({"state": state_dict(), "participants": manager.num_participants()}, out)
    manager.shutdown(wait=False)
    pg.shutdown()
