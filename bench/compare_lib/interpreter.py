# SPDX-License-Identifier: Apache-2.0
"""The interpreter of bench/compare and bench/busy_ddp: one that sees torch and torch_smddp.

ensure(repo, tool) returns when this interpreter imports both (an in-tree build of the extension
under python/ counts, and is then put on PYTHONPATH for the ranks); otherwise it re-executes the
tool under the repository's .venv, then /usr/bin/python3, each tried once (BENCH_COMPARE_TRIED),
and exits with a message naming what it tried.
Invariant: imports nothing outside the standard library before torch is found.
"""
import os
import sys


def _pythons(repo):
    return (os.path.join(repo, ".venv", "bin", "python"), "/usr/bin/python3")


def ensure(repo, tool):
    """Re-executes under an interpreter that sees torch and torch_smddp (the venv first)."""
    try:
        import torch  # noqa: F401
        import torch_smddp  # noqa: F401
        return
    except ImportError:
        pass
    src = os.path.join(repo, "python")
    if os.path.isdir(os.path.join(src, "torch_smddp")) and src not in sys.path:
        sys.path.insert(0, src)  # an in-tree build of the extension
        try:
            import torch  # noqa: F401,F811
            import torch_smddp  # noqa: F401,F811
            os.environ["PYTHONPATH"] = os.pathsep.join(
                [src] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
            return
        except ImportError:
            pass
    tried = os.environ.get("BENCH_COMPARE_TRIED", "").split(os.pathsep)
    for py in _pythons(repo):
        if os.path.exists(py) and py not in tried and py != sys.executable:
            os.environ["BENCH_COMPARE_TRIED"] = os.pathsep.join(tried + [py])
            os.execv(py, [py] + sys.argv)
    sys.exit(f"{tool}: no interpreter sees torch and torch_smddp; tried "
             f"{sys.executable} and {', '.join(_pythons(repo))}. Build first: "
             "bash scripts/run.sh build")
