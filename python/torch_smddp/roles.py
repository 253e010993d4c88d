# SPDX-License-Identifier: Apache-2.0
"""One process group per torchrun role, for jobs whose hosts play different parts (SageMaker
heterogeneous clusters: `torch_smddp.launch` makes each instance group a role).

    dist.init_process_group("smddp")
    roles = torch_smddp.roles.role_groups()
    if roles.role == "train":
        model = DDP(model, process_group=roles.group)
    producers = roles.ranks["data"]          # global ranks of another role

Invariant: role_groups() is collective over the world group: every rank calls it, and the groups
are created in the same order (sorted role names) on every rank, as new_group requires. A rank's
role is ROLE_NAME (set by torchrun), or `role=` when given.
"""
import os
from dataclasses import dataclass

import torch.distributed as dist


@dataclass
class RoleGroups:
    role: str      # this rank's role
    ranks: dict    # role -> its global ranks, ascending
    groups: dict   # role -> its process group (a group object only on its own members)

    @property
    def group(self):
        """This rank's role's group."""
        return self.groups[self.role]

    @property
    def role_rank(self):
        return self.ranks[self.role].index(dist.get_rank())


def role_groups(role=None, backend=None):
    if not dist.is_initialized():
        raise RuntimeError("torch_smddp.roles.role_groups() needs init_process_group() first")
    mine = role if role is not None else os.environ.get("ROLE_NAME", "default")
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, mine)
    ranks = {}
    for r, name in enumerate(everyone):
        ranks.setdefault(name, []).append(r)
    groups = {name: dist.new_group(ranks[name], backend=backend) for name in sorted(ranks)}
    return RoleGroups(role=mine, ranks=ranks, groups=groups)
