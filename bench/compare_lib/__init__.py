# SPDX-License-Identifier: Apache-2.0
"""Helpers of bench/compare (runners, limits, tables, plot); see that script and docs/PERF.md.
Invariant: importable without torch except torch_worker.py, which runs in the worker processes.
"""
