# SPDX-License-Identifier: Apache-2.0
"""Rank bodies for test_window.py: torch's one-sided windows (dist._new_window) on smddp.

puts: every rank puts into every rank's window (its own too), windows of different sizes, float32
pieces from 1 element (4 B) up to a rank's whole region at random offsets, then signals; after
waiting for everyone each window holds exactly the closed-form contents. `alloc`: the windows'
tensors come from allocate_tensor (one host: mapped, in place; map_remote_tensor shows the peers'
windows), else torch's (messages; map_remote_tensor refused, naming the rank). Then an
out-of-range put is refused naming the rank and the window, and the group still runs collectives.
ordering: 30 rounds of 64 puts then a signal, the target checking each round after its wait.
dead_peer: the victim SIGKILLs itself; the survivor's wait_signal names it.
"""
import os
import random
import signal
import time
from datetime import timedelta

import torch
import torch.distributed as dist


def _window_tensor(n, alloc):
    if alloc:
        cpu = torch.device("cpu")
        t = dist.group.WORLD._get_backend(cpu).allocate_tensor(n, dtype=torch.float32, device=cpu)
    else:
        t = torch.empty(n, dtype=torch.float32)
    return t.fill_(-1.0)


def _elements(rank, base):
    return base + 250 * rank


def _put_of(frm, to, world, n):
    region = n // world
    rng = random.Random(1000 * frm + to)
    count = rng.randint(1, region)
    return frm * region + rng.randint(0, region - count), count


def _values(frm, to, count):
    return (torch.arange(count, dtype=torch.float32) * 0.5 + 100 * frm + to)


def puts(rank, world, init, alloc, base):
    dist.init_process_group("smddp", init_method=init, rank=rank, world_size=world)
    _puts(rank, world, alloc, base, window_id=0)
    dist.destroy_process_group()


def _puts(rank, world, alloc, base, window_id, near=None, far=None):
    """near: a peer on this rank's host (default: the next rank; one host), far: one on another
    host, whose window map_remote_tensor must refuse."""
    assert dist._supports_window()
    t = _window_tensor(_elements(rank, base), alloc)
    win = dist._new_window(t)
    for k in range(world):
        to = (rank + k) % world
        off, count = _put_of(rank, to, world, _elements(to, base))
        win.put(_values(rank, to, count), to, off, False)
        win.signal(to, False)
    for frm in range(world):
        win.wait_signal(frm, False)
    want = torch.full((_elements(rank, base),), -1.0)
    for frm in range(world):
        off, count = _put_of(frm, rank, world, _elements(rank, base))
        want[off:off + count] = _values(frm, rank, count)
    assert torch.equal(t, want), f"rank {rank}: window contents differ"
    dist.barrier()
    peer = (rank + 1) % world if near is None else near
    if far is not None:
        try:
            win.map_remote_tensor(far)
            raise AssertionError("a window on another host was mapped")
        except RuntimeError as e:
            assert f"rank {far}'s window is not mapped here" in str(e), str(e)
    if alloc:
        remote = win.map_remote_tensor(peer)
        assert remote.numel() == _elements(peer, base)
        mine = torch.full((_elements(peer, base),), -1.0)
        for frm in range(world):
            off, count = _put_of(frm, peer, world, _elements(peer, base))
            mine[off:off + count] = _values(frm, peer, count)
        assert torch.equal(remote, mine), f"rank {rank}: rank {peer}'s mapped window differs"
    elif world > 1:
        try:
            win.map_remote_tensor(peer)
            raise AssertionError("an unmapped window was mapped")
        except RuntimeError as e:
            assert f"rank {peer}'s window is not mapped here" in str(e), str(e)
    try:
        win.put(torch.ones(2), peer, _elements(peer, base) - 1, False)
        raise AssertionError("an out-of-range put was accepted")
    except RuntimeError as e:
        text = str(e)
        assert f"rank {rank}: window {window_id}: put of 8 B at offset" in text, text
        assert "out of range" in text, text
    dist.barrier()
    v = torch.full((3,), float(rank))
    dist.all_reduce(v)
    assert v.tolist() == [world * (world - 1) / 2] * 3, v.tolist()


def ordering(rank, world, init, alloc):
    dist.init_process_group("smddp", init_method=init, rank=rank, world_size=world)
    _ordering(rank, world, alloc)
    dist.destroy_process_group()


def _ordering(rank, world, alloc):
    """Rank 0 and the last rank (on another host in a 2 x 2 layout); the others only wait."""
    first, last = 0, world - 1
    t = _window_tensor(64, alloc)
    win = dist._new_window(t)
    for rnd in range(1, 31):
        if rank not in (first, last):
            break
        if rank == first:
            for slot in range(64):
                win.put(torch.tensor([float(rnd * 1000 + slot)]), last, slot, False)
            win.signal(last, False)
            win.wait_signal(last, False)
        else:
            win.wait_signal(first, False)
            want = torch.arange(64, dtype=torch.float32) + rnd * 1000
            assert torch.equal(t, want), f"round {rnd}: {t[:4].tolist()}"
            win.signal(first, False)
    dist.barrier()


def across_hosts(rank, world, init):
    """One group over namespace hosts: windows in smddp's memory (mapped within a host, messages
    between hosts), then in torch's (messages everywhere), then ordering across the hosts."""
    dist.init_process_group("smddp", init_method=init, rank=rank, world_size=world)
    near, far = rank ^ 1, (rank + 2) % world  # 2 ranks a host
    _puts(rank, world, True, 1000, window_id=0, near=near, far=far)
    _puts(rank, world, False, 1 << 20, window_id=1, near=near)
    _ordering(rank, world, True)
    dist.destroy_process_group()


def dead_peer(rank, world, init, alloc, victim):
    dist.init_process_group("smddp", init_method=init, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    t = _window_tensor(16, alloc)
    win = dist._new_window(t)
    dist.barrier()
    if rank == victim:
        os.kill(os.getpid(), signal.SIGKILL)
    start = time.monotonic()
    try:
        win.wait_signal(victim, False)
        raise AssertionError("a signal came from a dead peer")
    except RuntimeError as e:
        text, took = str(e), time.monotonic() - start
        assert f"rank {victim}" in text and "window 0" in text, text
        assert took < 30, f"named the dead peer after {took:.1f} s: {text}"
