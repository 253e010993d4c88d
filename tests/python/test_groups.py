# SPDX-License-Identifier: Apache-2.0
"""Several smddp groups in one job: two overlapping new_groups alternated for 100 steps,
plus a whole-world subgroup, with closed-form results."""
import harness
import workers_misc


def test_overlapping_groups():
    harness.run(workers_misc.groups, 4, init="tcp", timeout=180)
