# SPDX-License-Identifier: Apache-2.0
"""Unsupported collectives, dtypes and ops raise RuntimeError naming smddp (never a crash), the
group stays usable afterwards, and Work.wait(timeout) is bounded."""
import pytest

import harness
import workers_misc


@pytest.mark.parametrize("world", [1, 2])
def test_errors(world):
    harness.run(workers_misc.errors, world, init="file", timeout=120)
