# SPDX-License-Identifier: Apache-2.0
"""Membership for groups that keep training through lost ranks: who is in the next generation,
agreed through a torch Store, then torch's reconfigure.

    dist.init_process_group("smddp", store=store, rank=i, world_size=n, enable_reconfigure=True)
    quorum = torch_smddp.elastic.StoreQuorum(store)
    gen = quorum.reconfigure(info={"rank": i}, expected=n)       # the first generation
    ...
    except RuntimeError:                                          # a collective lost a peer
        gen = quorum.reconfigure(info={"rank": dist.get_rank(), "step": step})
    ...
    gen = torch_smddp.elastic.StoreQuorum(store).join()          # a replacement process

Each generation has an epoch number. Its members (the processes of the generation before that
call reconfigure()) register under the epoch; the first to register leads: it waits until
`expected` members have registered, or, without `expected` (after a failure nobody knows how
many are left), until no member has registered for `settle` seconds; then it admits the
newcomers that wait (join(); it gives them `settle` seconds to register), orders everyone (members by info["rank"], then newcomers) and
publishes the list with a fresh uuid. Every process then calls dist._reconfigure with those
handles, so all of them form the same communicator. A process that registers after the leader
decided is left out (QuorumError) and may join() the next generation.

Invariant: every wait is bounded by `timeout`; the store must outlive the processes that fail
(torchrun's agent store, or a TCPStore served by a process that does not train). Works with any
backend that implements reconfigure (smddp; gloo too).
"""
import json
import secrets
import time
from dataclasses import dataclass, field
from datetime import timedelta

import torch.distributed as dist

from . import _C


class QuorumError(RuntimeError):
    """This process is not a member of the generation it tried to enter."""


@dataclass
class Generation:
    epoch: int
    uuid: int
    rank: int                                  # this process's rank in the generation
    size: int
    infos: list = field(default_factory=list)  # every member's info, in rank order
    newcomers: int = 0                         # how many members came in through join()


def _seconds(timeout):
    return timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)


class StoreQuorum:
    def __init__(self, store, prefix="smddp/quorum", settle=1.0, timeout=60.0):
        self._store = store
        self._prefix = prefix
        self._settle = float(settle)
        self._timeout = _seconds(timeout)
        self._epoch = None  # the epoch this process is in; None before it entered one

    @property
    def epoch(self):
        return self._epoch

    def waiting(self):
        """Processes that called join() and were not admitted yet (one store call)."""
        return max(0, self._store.add(self._key("waiting"), 0))

    def admitted(self):
        """Processes admitted through join() so far, in all generations (one store call)."""
        return self._store.add(self._key("admitted"), 0)

    def reconfigure(self, info=None, expected=None, group=None, timeout=None):
        """Called by every member of the current generation (the first time: by every initial
        process, with `expected` = their number): forms the next generation and reconfigures
        `group` (default: the world group) to it."""
        epoch = 0 if self._epoch is None else self._epoch + 1
        info = dict(info or {})
        index = self._store.add(self._key(f"e{epoch}/mn"), 1) - 1
        self._set(f"e{epoch}/m{index}", {"handle": dist._get_reconfigure_handle(group),
                                         "info": info})
        if index == 0:
            self._lead(epoch, expected)
        return self._enter(epoch, ("m", index), group, timeout)

    def join(self, info=None, group=None, timeout=None):
        """Called by a process that is not a member (a replacement): waits until the members
        form their next generation, enters it and reconfigures `group` to it."""
        info = dict(info or {})
        self._store.add(self._key("waiting"), 1)
        deadline = time.monotonic() + self._timeout
        while True:
            epoch = self._current_epoch() + 1
            index = self._store.add(self._key(f"e{epoch}/jn"), 1) - 1
            self._set(f"e{epoch}/j{index}", {"handle": dist._get_reconfigure_handle(group),
                                             "info": info})
            try:
                return self._enter(epoch, ("j", index), group, timeout,
                                   deadline - time.monotonic())
            except QuorumError:
                if time.monotonic() >= deadline:
                    raise
                # came after the leader decided: the members admit it at their next generation

    # ---- internals ---------------------------------------------------------------------------

    def _key(self, name):
        return f"{self._prefix}/{name}"

    def _set(self, name, value):
        # Signed with the job secret when there is one: torch's store admits anyone who reaches it.
        key = self._key(name)
        self._store.set(key, _C._seal_value(key, json.dumps(value).encode()))

    def _get(self, name, wait_s):
        key = self._key(name)
        self._store.wait([key], timedelta(seconds=max(wait_s, 0.001)))
        return json.loads(_C._open_value(key, self._store.get(key)))

    def _current_epoch(self):
        return self._store.add(self._key("epoch"), 0) - 1  # "epoch" holds last epoch + 1

    def _lead(self, epoch, expected):
        start = time.monotonic()
        seen, changed = -1, start
        while True:
            now = time.monotonic()
            n = self._store.add(self._key(f"e{epoch}/mn"), 0)
            if n != seen:
                seen, changed = n, now
            if expected is not None and n >= expected:
                break
            if expected is None and now - changed >= self._settle:
                break
            if now - start >= self._timeout:
                break  # whoever came; the ones missing are left out
            time.sleep(0.005)
        # Newcomers that wait register for this epoch soon (one may be retrying after coming
        # too late for the one before): give them up to `settle` more.
        waiting, until = self.waiting(), time.monotonic() + self._settle
        joiners = self._store.add(self._key(f"e{epoch}/jn"), 0)
        while joiners < waiting and time.monotonic() < until:
            time.sleep(0.005)
            joiners = self._store.add(self._key(f"e{epoch}/jn"), 0)
        left = self._timeout - (time.monotonic() - start)
        members = [self._get(f"e{epoch}/m{i}", left) for i in range(n)]
        newcomers = [self._get(f"e{epoch}/j{i}", left) for i in range(joiners)]
        order = sorted(range(n), key=lambda i: (members[i]["info"].get("rank", float("inf")), i))
        entries = [dict(members[i], slot=["m", i]) for i in order]
        entries += [dict(newcomers[i], slot=["j", i]) for i in range(joiners)]
        self._set(f"e{epoch}/final", {"uuid": secrets.randbits(62), "entries": entries,
                                      "newcomers": joiners})
        self._store.add(self._key("epoch"), epoch - self._current_epoch())  # now epoch + 1
        if joiners:
            self._store.add(self._key("admitted"), joiners)
            self._store.add(self._key("waiting"), -joiners)

    def _enter(self, epoch, slot, group, timeout, wait_s=None):
        final = self._get(f"e{epoch}/final", self._timeout if wait_s is None else wait_s)
        slots = [tuple(e["slot"]) for e in final["entries"]]
        if slot not in slots:
            raise QuorumError(f"this process registered for generation {epoch} after its "
                              f"members were decided ({len(slots)} of them)")
        rank = slots.index(slot)
        handles = [e["handle"] for e in final["entries"]]
        bound = timedelta(seconds=_seconds(timeout) if timeout is not None else self._timeout)
        dist._reconfigure(final["uuid"], handles, group=group, timeout=bound).wait()
        self._epoch = epoch
        return Generation(epoch=epoch, uuid=final["uuid"], rank=rank, size=len(handles),
                          infos=[e["info"] for e in final["entries"]],
                          newcomers=final["newcomers"])
