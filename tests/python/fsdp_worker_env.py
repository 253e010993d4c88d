# SPDX-License-Identifier: Apache-2.0
"""workers_fsdp.suite under torchrun (env:// rendezvous): FSDP2 and HSDP over smddp equal to gloo
and the unsharded model. Prints one line per rank when it passed."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import workers_fsdp  # noqa: E402

rank = int(os.environ["RANK"])
workers_fsdp.suite(rank, int(os.environ["WORLD_SIZE"]), "env://")
print(f"fsdp suite passed on rank {rank}", flush=True)
