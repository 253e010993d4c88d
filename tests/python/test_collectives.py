# SPDX-License-Identifier: Apache-2.0
"""Every supported collective over torch.distributed with backend "smddp": world sizes 1-4,
FileStore and TCPStore rendezvous, all dtypes and ops, sync/async, in place/out of place,
strided tensors. One spawned job per (world, init) runs all checks (workers_collectives.py).
"""
import pytest

import harness
import workers_collectives


@pytest.mark.parametrize(
    "world,init",
    [(1, "file"), (2, "file"), (3, "file"), (4, "file"), (2, "tcp"), (3, "tcp")],
)
def test_collectives(world, init):
    harness.run(workers_collectives.suite, world, init=init, timeout=150 + 30 * world)
