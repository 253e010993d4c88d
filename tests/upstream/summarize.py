# SPDX-License-Identifier: Apache-2.0
"""Summarizes torch_suite.py JSON files as markdown: pass/fail/error/skip counts per backend and
world size side by side, then every smddp test that did not pass or skip, with its first error
line, and the tests gloo passes that smddp skips, by the suite's reason.

    python tests/upstream/summarize.py build-upstream/*.json
"""
import json
import re
import sys
from collections import defaultdict


def load(paths):
    runs = {}
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        runs[(d["backend"], d["world"])] = d
    return runs


def counts_table(runs):
    keys = sorted(runs, key=lambda k: (k[1], k[0] != "smddp"))
    lines = ["| backend | world | pass | fail | error | skip | time |", "|---|---:|---:|---:|---:|---:|---:|"]
    for k in keys:
        d = runs[k]
        c = defaultdict(int, d["counts"])
        lines.append(f"| {k[0]} | {k[1]} | {c['pass']} | {c['fail']} | {c['error']} | {c['skip']} | "
                     f"{d['seconds'] // 60} min |")
    return "\n".join(lines)


def failures(runs):
    """smddp's failed tests grouped by their error (the list of supported ops trimmed)."""
    groups = defaultdict(lambda: defaultdict(set))  # error -> test -> worlds
    for (backend, world), d in runs.items():
        if backend != "smddp":
            continue
        for name, t in d["tests"].items():
            if t["outcome"] in ("fail", "error"):
                error = re.sub(r" \(supported: [^)]*\)?", "", t["detail"]).replace("|", "\\|")
                groups[error][name].add(world)
    if not groups:
        return "none"
    lines = ["| error | tests (world sizes) |", "|---|---|"]
    for error in sorted(groups, key=lambda e: -len(groups[e])):
        tests = ", ".join(f"`{n}` ({','.join(str(w) for w in sorted(ws))})"
                          for n, ws in sorted(groups[error].items()))
        lines.append(f"| {error} | {tests} |")
    return "\n".join(lines)


def gloo_only(runs):
    """Tests gloo passes that smddp skips, grouped by the suite's reason for skipping them."""
    groups = defaultdict(set)  # skip reason -> tests
    for (backend, world), d in runs.items():
        if backend != "gloo":
            continue
        mine = runs.get(("smddp", world))
        if mine is None:
            continue
        for name, t in d["tests"].items():
            other = mine["tests"].get(name, {})
            if t["outcome"] == "pass" and other.get("outcome") == "skip":
                groups[other.get("detail", "").replace("|", "\\|")].add(name)
    if not groups:
        return "none"
    lines = ["| the suite's skip reason | tests |", "|---|---|"]
    for reason in sorted(groups, key=lambda r: -len(groups[r])):
        lines.append(f"| {reason} | " + ", ".join(f"`{n}`" for n in sorted(groups[reason])) + " |")
    return "\n".join(lines)


def ungated(runs):
    """Tests the runner lets smddp run although the suite gates them on another backend's name."""
    lines = []
    for (backend, world), d in sorted(runs.items(), key=lambda kv: kv[0][1]):
        names = d.get("ungated") or []
        if backend != "smddp" or not names:
            continue
        outcome = defaultdict(list)
        for n in names:
            outcome[d["tests"].get(n, {}).get("outcome", "not run")].append(n)
        lines.append(f"- world {world}: " + "; ".join(
            f"{o} {len(ns)} ({', '.join(f'`{n}`' for n in sorted(ns))})" for o, ns in sorted(outcome.items())))
    return "\n".join(lines) or "none"


def main(paths):
    runs = load(paths)
    torch_version = next(iter(runs.values()))["torch"]
    print(f"torch {torch_version}\n")
    print(counts_table(runs))
    print("\nsmddp tests that failed or errored:\n")
    print(failures(runs))
    print("\nrun against smddp although the suite gates them on another backend's name:\n")
    print(ungated(runs))
    print("\ngloo passes, smddp skips:\n")
    print(gloo_only(runs))


if __name__ == "__main__":
    main(sys.argv[1:])
