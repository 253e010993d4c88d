# SPDX-License-Identifier: Apache-2.0
"""bench/testbed's pieces: the namespace hosts and the backends run on them (runners.py), the
report and the plot (report.py)."""
