# SPDX-License-Identifier: Apache-2.0
"""Point-to-point over smddp: send / recv / isend / irecv / batch_isend_irecv (ring exchanges,
every dtype, zero and large sizes, tags out of order, strided tensors), recv from any source,
send_object_list / recv_object_list and monitored_barrier, worlds 2 and 3 (workers_p2p.py); and
a monitored_barrier that names the rank that never came (where torch lets a backend other than
gloo run it)."""
import pytest

import harness
import workers_p2p


@pytest.mark.parametrize("world,init", [(2, "file"), (3, "tcp")])
def test_p2p(world, init):
    harness.run(workers_p2p.suite, world, init=init, timeout=180)


@pytest.mark.skipif(not workers_p2p.torch_allows_monitored_barrier(),
                    reason="this torch refuses monitored_barrier for any backend but gloo")
def test_monitored_barrier_names_the_missing_rank():
    harness.run(workers_p2p.monitored_barrier_names_the_missing_rank, 3, init="file", timeout=60)
