# SPDX-License-Identifier: Apache-2.0
"""workers_window.across_hosts under torchrun (env:// rendezvous), for the windows across
namespace hosts (test_window.py). Prints one line per rank when it passed."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch_smddp  # noqa: E402,F401  (registers the backend)
import workers_window  # noqa: E402

rank = int(os.environ["RANK"])
workers_window.across_hosts(rank, int(os.environ["WORLD_SIZE"]), "env://")
print(f"window suite passed on rank {rank}", flush=True)
