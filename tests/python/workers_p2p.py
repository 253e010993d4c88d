# SPDX-License-Identifier: Apache-2.0
"""Rank bodies for test_p2p.py: send / recv / isend / irecv / batch_isend_irecv, a recv from any
source, the object forms, and monitored_barrier, against closed-form values.

Values: what rank s sends rank d is piece(s, d, n) = (i % 7) + 10 s + d, exact in every dtype.
Invariant: every failure names the rank, the operation and the first wrong index.
"""
import inspect
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from workers_collectives import DTYPES, check


def piece(src, dst, n, dtype):
    return (torch.arange(n, dtype=torch.float64) % 7 + 10 * src + dst).to(dtype)


def check_ring(rank, world):
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    for dtype in DTYPES:
        for n in (0, 1, 7, 100_003):
            out = torch.full((n,), 99).to(dtype)
            if (rank + n) % 2 == 0:  # half the ranks post the receive first
                r = dist.irecv(out, src=prv, tag=3)
                dist.send(piece(rank, nxt, n, dtype), dst=nxt, tag=3)
                r.wait()
            else:
                s = dist.isend(piece(rank, nxt, n, dtype), dst=nxt, tag=3)
                dist.recv(out, src=prv, tag=3)
                s.wait()
            check(rank, f"send/recv ring {dtype} n={n}", out, piece(prv, rank, n, dtype))
    # two tags: sent 5 then 6, received 6 then 5
    a, b = torch.zeros(3), torch.zeros(3)
    s5 = dist.isend(piece(rank, nxt, 3, torch.float32), dst=nxt, tag=5)
    s6 = dist.isend(piece(rank, nxt, 3, torch.float32) + 100, dst=nxt, tag=6)
    dist.recv(b, src=prv, tag=6)
    dist.recv(a, src=prv, tag=5)
    s5.wait()
    s6.wait()
    check(rank, "tag 5", a, piece(prv, rank, 3, torch.float32))
    check(rank, "tag 6", b, piece(prv, rank, 3, torch.float32) + 100)
    # a strided receive and a strided send
    base = torch.zeros(4, 2)
    src = torch.stack([piece(rank, nxt, 4, torch.float32), torch.zeros(4)], 1)
    s = dist.isend(src[:, 0], dst=nxt)
    dist.recv(base[:, 1], src=prv)
    s.wait()
    check(rank, "recv strided", base[:, 1], piece(prv, rank, 4, torch.float32))
    check(rank, "recv strided untouched", base[:, 0], torch.zeros(4))


def check_batch(rank, world):
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    outs = [torch.zeros(6), torch.zeros(6)]
    ops = [dist.P2POp(dist.isend, piece(rank, nxt, 6, torch.float32), nxt),
           dist.P2POp(dist.irecv, outs[0], prv),
           dist.P2POp(dist.isend, piece(rank, prv, 6, torch.float32), prv),
           dist.P2POp(dist.irecv, outs[1], nxt)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    check(rank, "batch_isend_irecv from prev", outs[0], piece(prv, rank, 6, torch.float32))
    if world > 2:  # with two ranks prev == next: both messages share one (peer, tag)
        check(rank, "batch_isend_irecv from next", outs[1], piece(nxt, rank, 6, torch.float32))


def check_any_source(rank, world):
    if rank == 0:
        seen = set()
        for _ in range(world - 1):
            t = torch.zeros(2, dtype=torch.int64)
            src = dist.recv(t)
            assert src not in seen and 0 < src < world, f"rank 0: any source: {src} ({seen})"
            assert t.tolist() == [src, src], f"rank 0: any source from {src}: {t.tolist()}"
            seen.add(src)
    else:
        dist.send(torch.full((2,), rank, dtype=torch.int64), dst=0)


def check_objects(rank, world):
    if rank == 0:
        for d in range(1, world):
            dist.send_object_list([{"to": d, "text": "x" * d}, d * 1.5], dst=d)
    else:
        got = [None, None]
        dist.recv_object_list(got, src=0)
        assert got == [{"to": rank, "text": "x" * rank}, rank * 1.5], f"rank {rank}: {got}"


def torch_allows_monitored_barrier():
    """torch up to 2.11 at least refuses monitored_barrier on any backend but gloo, in Python,
    before the backend is asked; later versions accept any backend with CPU support."""
    return "only implemented for GLOO" not in inspect.getsource(dist.monitored_barrier)


def suite(rank, world, init_method):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    check_ring(rank, world)
    check_batch(rank, world)
    check_any_source(rank, world)
    check_objects(rank, world)
    if torch_allows_monitored_barrier():
        dist.monitored_barrier(timeout=timedelta(seconds=30))
        dist.monitored_barrier(timeout=timedelta(seconds=30), wait_all_ranks=True)
    dist.barrier()
    dist.destroy_process_group()


def monitored_barrier_names_the_missing_rank(rank, world, init_method):
    """The last rank never enters: rank 0 names it after the timeout; the others are not
    released and say so."""
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    dist.barrier()
    if rank == world - 1:
        time.sleep(4)
        return
    t0 = time.monotonic()
    try:
        dist.monitored_barrier(timeout=timedelta(seconds=2), wait_all_ranks=True)
    except RuntimeError as e:
        msg = str(e)
        took = time.monotonic() - t0
        assert took < 10, f"rank {rank}: monitored_barrier took {took:.1f} s"
        if rank == 0:
            assert f"Rank {world - 1} failed to pass monitoredBarrier in 2000 ms" in msg, msg
        else:  # gloo's words
            assert (f"Rank {rank} successfully reached monitoredBarrier, but received errors while"
                    " waiting for send/recv from rank 0") in msg, msg
        return
    raise AssertionError(f"rank {rank}: monitored_barrier passed without rank {world - 1}")
