# SPDX-License-Identifier: Apache-2.0
"""Busy processes for the "busy machine" runs of bench/compare --load and bench/busy_ddp: N plain
busy loops per usable core, unbound (every usable CPU) and at niceness 0, competing with the
ranks for the CPUs as a training job's data loaders and other tenants would.

Each one is a shell spinning on `while :; do :; done`, started through a short Python stub that
widens its affinity to every usable CPU, asks the kernel to kill it when this process goes
(PR_SET_PDEATHSIG) and arms an alarm (kept across exec: SIGALRM ends the shell) before it execs
the shell, so even a SIGKILLed parent leaves no spinner beyond `bound_s`.
Invariant: all of them share one process group of their own, and every way out of BusyLoad
(normal exit, an exception, Ctrl-C, SIGTERM, interpreter exit) kills that group and reaps it.
"""
import atexit
import os
import signal
import subprocess
import sys
import time

from .common import usable_cpus

# Runs in the child: affinity, death signal, alarm, then exec the busy loop (no Python left).
_STUB = """
import ctypes, os, signal, sys
os.sched_setaffinity(0, [int(c) for c in sys.argv[1].split(",")])
try:
    os.setpriority(os.PRIO_PROCESS, 0, 0)  # niceness 0 (allowed only from a niced parent as root)
except OSError:
    pass
ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[2]):
    sys.exit(0)  # the parent went before the death signal was armed
signal.alarm(int(sys.argv[3]))
os.execvp("sh", ["sh", "-c", "while :; do :; done"])
"""


def count_for(per_core, cores=None):
    """How many busy processes `per_core` per usable core means (at least 1 when per_core > 0)."""
    cores = cores or len(usable_cpus())
    return max(1, round(per_core * cores)) if per_core > 0 else 0


class BusyLoad:
    """with BusyLoad(per_core, bound_s) as load: ... — load.count processes spin meanwhile."""

    def __init__(self, per_core, bound_s=3600, python=None):
        self.per_core = per_core
        self.cpus = usable_cpus()
        self.count = count_for(per_core, len(self.cpus))
        self.bound_s = max(1, int(bound_s))
        self.python = python or sys.executable
        self.procs = []
        self.pgid = None
        self.started = None
        self._old_term = None

    def describe(self):
        """What compare.json records; pgid: the busy processes' group once started (tests
        check it is empty afterwards)."""
        return {"per_core": self.per_core, "processes": self.count, "cores": len(self.cpus),
                "niceness": os.getpriority(os.PRIO_PROCESS, 0), "bound_s": self.bound_s,
                "pgid": self.pgid}

    def start(self):
        if self.count == 0:
            return self
        atexit.register(self.stop)
        self._old_term = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, _raise_exit)
        argv = [self.python, "-c", _STUB, ",".join(map(str, self.cpus)), str(os.getpid()),
                str(self.bound_s)]
        try:
            for _ in range(self.count):
                p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     process_group=self.pgid or 0, close_fds=True)
                self.pgid = self.pgid or p.pid
                self.procs.append(p)
        except BaseException:
            self.stop()
            raise
        self.started = time.monotonic()
        return self

    def alive(self):
        """How many of the busy processes still run (the alarm may have ended some)."""
        return sum(p.poll() is None for p in self.procs)

    def stop(self):
        """Kills the whole group and reaps every process; safe to call twice."""
        if self.pgid is not None:
            try:
                os.killpg(self.pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass
        self.procs, self.pgid = [], None
        if self._old_term is not None:
            signal.signal(signal.SIGTERM, self._old_term)
            self._old_term = None
        atexit.unregister(self.stop)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False


def _raise_exit(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through BusyLoad.__exit__

