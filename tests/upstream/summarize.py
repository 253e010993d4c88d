"""Summarizes torch_suite.py JSON files as markdown: pass/fail/error/skip counts per backend and
world size side by side, then every smddp test that did not pass or skip, with its first error
line, and the tests gloo passes that smddp skips.

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
    names = set()
    for (backend, world), d in runs.items():
        if backend != "gloo":
            continue
        mine = runs.get(("smddp", world))
        if mine is None:
            continue
        for name, t in d["tests"].items():
            if t["outcome"] == "pass" and mine["tests"].get(name, {}).get("outcome") == "skip":
                names.add(name)
    return sorted(names)


def main(paths):
    runs = load(paths)
    torch_version = next(iter(runs.values()))["torch"]
    print(f"torch {torch_version}\n")
    print(counts_table(runs))
    print("\nsmddp tests that failed or errored:\n")
    print(failures(runs))
    only = gloo_only(runs)
    print(f"\ngloo passes, smddp skips ({len(only)}): " + ", ".join(f"`{n}`" for n in only))


if __name__ == "__main__":
    main(sys.argv[1:])
