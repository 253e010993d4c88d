# SPDX-License-Identifier: Apache-2.0
"""What the multi-host tests share: where tests/netns/hosts.sh is, and why they cannot run here
(None when they can).

Invariant: the reason names the missing piece and how to get it; tests skip with it, never
silently pass.
"""
import os
import shutil

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS_SH = os.path.join(REPO, "tests", "netns", "hosts.sh")


def skip_reason():
    if os.geteuid() != 0:
        return "needs root (ip netns)"
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            return f"needs '{tool}' (apt-get install iproute2 util-linux)"
    return None


def torchrun_on_hosts(tag, script_args, port, env=None, timeout=240, cwd=None):
    """torchrun on 2 namespace hosts (tests/netns/hosts.sh `tag`, made and removed here) with 2
    ranks each, rendezvous on host a: script_args is the script and its arguments. Returns
    [(returncode, output)] per host; a host still running at `timeout` has its whole process
    group killed and "(timed out)" appended."""
    import signal
    import subprocess
    import sys

    try:
        subprocess.run([HOSTS_SH, "up", tag, "2"], check=True, timeout=30, capture_output=True)
        procs = [subprocess.Popen(
            [HOSTS_SH, "exec", tag, host, sys.executable, "-m", "torch.distributed.run",
             "--nnodes=2", "--nproc_per_node=2", f"--node_rank={i}",
             "--master_addr=192.0.2.101", f"--master_port={port}"] + list(script_args),
            cwd=cwd, env=env if env is not None else dict(os.environ), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True)
            for i, host in enumerate("ab")]
        results = []
        for p in procs:
            try:
                out = p.communicate(timeout=timeout)[0]
                results.append((p.returncode, out))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                results.append((-9, p.communicate()[0] + "\n(timed out)"))
        return results
    finally:
        subprocess.run([HOSTS_SH, "down", tag], timeout=60, capture_output=True)
