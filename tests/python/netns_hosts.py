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
