# SPDX-License-Identifier: Apache-2.0
"""The job secret through torch: a job whose processes share SMDDP_JOB_SECRET trains unchanged
(its store values signed), and a process with another secret cannot join it.
"""
import pytest

import harness
import workers_secret


@pytest.mark.parametrize("world", [1, 3])
def test_a_job_with_the_secret_trains(world, monkeypatch):
    monkeypatch.setenv("SMDDP_JOB_SECRET", "tests-job-secret-0123456789abcdef")
    harness.run(workers_secret.trains_with_secret, world, init="tcp", timeout=90)


def test_a_process_with_another_secret_cannot_join(monkeypatch):
    monkeypatch.setenv("SMDDP_TIMEOUT_MS", "8000")
    harness.run(workers_secret.secrets_differ, 3, timeout=90)
