# SPDX-License-Identifier: Apache-2.0
"""bench/model's pieces: the alpha-beta-gamma costs of smddp's all_reduce algorithms (costs.py)
and their calibration against bench/testbed's measurements (calibrate.py)."""
