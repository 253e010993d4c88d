#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The docs check (part of the test command): the documentation cannot drift from the code.

    python3 scripts/check_docs.py [--build-dir build] [--python .venv/bin/python]

- every repository path the docs and the examples' docstrings name exists (globs match a file);
- every SMDDP_* name in the docs occurs in the code, and every variable the configuration parser
  reads (src/common/config.h, and its former names) is in docs/CONFIGURATION.md;
- every error message quoted in an ```error block occurs in the source: each line's pieces
  between `…` (what varies) appear verbatim in src/, python/ or include/;
- every example's --help runs (with --python), and the perf tools' flag reference in
  docs/BENCHMARKS.md is what each perf tool's --help prints (with --build-dir);
- the CHANGELOG's newest section is CMakeLists.txt's version;
- README.md has at most 220 lines, no paragraph over 150 words, its "Which backend when" and
  "Features" tables within its first 80 lines; docs/PERF.md at most 250 lines.
Before checking the tree it checks itself on a planted dangling path, an undocumented variable
and a message the source lacks: each must be caught (a check that cannot fail is no check).
Exit status 1 with one line per finding.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP_DIRS = ("src", "include", "python", "tests", "bench", "docs", "examples", "scripts", "docker",
            "deploy", "cmake", ".ci")
TOP_FILES = ("README.md", "CONTRIBUTING.md", "CHANGELOG.md", "LICENSE", "setup.py",
             "pyproject.toml", "CMakeLists.txt", "MANIFEST.in")
PATH_RE = re.compile(r"(?<![\w/.-])((?:" + "|".join(re.escape(d) for d in TOP_DIRS) +
                     r")/[\w./*-]*[\w*]|(?:" + "|".join(re.escape(f) for f in TOP_FILES) +
                     r")(?![\w.-]))")
LINK_RE = re.compile(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)")
VAR_RE = re.compile(r"\bSMDDP_[A-Z0-9_]*[A-Z0-9]\b")
HELP_BEGIN, HELP_END = "<!-- perf-tool-help -->", "<!-- /perf-tool-help -->"
PERF_TOOLS = ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "alltoall", "reduce",
              "gather", "scatter", "sendrecv", "barrier")


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def git_files():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    return [f for f in out if os.path.exists(os.path.join(ROOT, f))]


def doc_files(files):
    """The documents checked: the Markdown a user reads (the CHANGELOG is history, not checked)."""
    return [f for f in files if f.endswith(".md") and f != "CHANGELOG.md"]


def example_docstrings(files):
    out = {}
    for f in files:
        if f.startswith("examples/") and f.endswith(".py"):
            m = re.search(r'"""(.*?)"""', read(os.path.join(ROOT, f)), re.S)
            if m:
                out[f] = m.group(1)
    return out


def source_text(files):
    """The product's source, adjacent string literals joined ("a "\n "b" reads as "a b")."""
    text = "".join(read(os.path.join(ROOT, f)) for f in files
                   if f.startswith(("src/", "python/", "include/")) and
                   f.endswith((".cc", ".h", ".py", ".cu", ".cuh")))
    return re.sub(r'"\s*(?:\+\s*)?\n\s*"', "", text)


def check_paths(name, text, base_dir):
    """Dangling repository paths in `text` (a document at `base_dir`, relative links too)."""
    bad = []
    for m in PATH_RE.finditer(text):
        path = m.group(1).rstrip(".")
        if "*" in path:
            if not glob.glob(os.path.join(ROOT, path)):
                bad.append(f"{name}: no file matches {path}")
        elif not os.path.exists(os.path.join(ROOT, path)):
            bad.append(f"{name}: {path} does not exist")
    for m in LINK_RE.finditer(text):
        target = m.group(1)
        if target.startswith(("http", "mailto")) or not re.search(r"\.\w+$|/$", target):
            continue
        if not os.path.exists(os.path.normpath(os.path.join(ROOT, base_dir, target))):
            bad.append(f"{name}: the link {target} leads nowhere")
    return bad


def config_variables():
    """What the configuration parser reads: SMDDP_CONFIG_VARS's names and the former names."""
    names = set(re.findall(r'X\(\w+,\s*"(SMDDP_\w+)"', read(os.path.join(ROOT, "src/common/config.h"))))
    names |= set(re.findall(r'\{"SMDDP_\w+",\s*"(SMDDP_\w+)"\}',
                            read(os.path.join(ROOT, "src/common/config.cc"))))
    return names


def check_variables(name, text, code):
    return [f"{name}: {v} is not read anywhere in the code" for v in sorted(set(VAR_RE.findall(text)))
            if v not in code]


def check_config_documented():
    doc = read(os.path.join(ROOT, "docs/CONFIGURATION.md"))
    return [f"docs/CONFIGURATION.md: {v}, which the configuration parser reads, is not documented"
            for v in sorted(config_variables()) if f"`{v}`" not in doc]


def check_messages(name, text, source):
    bad = []
    for block in re.findall(r"^```error\n(.*?)^```", text, re.S | re.M):
        for line in block.splitlines():
            for piece in line.split("…"):
                if piece.strip() and piece not in source:
                    bad.append(f"{name}: the quoted message piece {piece!r} is not in the source")
    return bad


def check_version():
    """CMakeLists.txt's version is the CHANGELOG's newest section."""
    version = re.search(r"project\(smddp VERSION ([0-9.]+)", read(os.path.join(ROOT, "CMakeLists.txt")))
    newest = re.search(r"^## (\S+)", read(os.path.join(ROOT, "CHANGELOG.md")), re.M)
    if not version or not newest or newest.group(1) != version.group(1):
        return [f"CHANGELOG.md: its newest section ({newest and newest.group(1)}) is not the version "
                f"in CMakeLists.txt ({version and version.group(1)})"]
    return []


def check_sizes():
    bad = []
    readme = read(os.path.join(ROOT, "README.md")).splitlines()
    if len(readme) > 220:
        bad.append(f"README.md: {len(readme)} lines (at most 220)")
    for heading in ("## Which backend when", "## Features"):
        at = next((i for i, l in enumerate(readme) if l.strip() == heading), None)
        end = None if at is None else next(
            (i for i in range(at + 1, len(readme)) if readme[i].startswith("## ")), len(readme))
        if at is None or end > 80:
            bad.append(f"README.md: the {heading[3:]!r} section must end within the first 80 lines")
    fenced = False
    for para in "\n".join(readme).split("\n\n"):
        lines = [l for l in para.splitlines() if l.strip()]
        if not lines:
            continue
        if lines[0].startswith("```") or fenced:
            fenced = (sum(l.startswith("```") for l in lines) % 2 == 1) != fenced
            continue
        if lines[0].startswith(("|", "#", "!")):
            continue
        words = len(" ".join(lines).split())
        if words > 150:
            bad.append(f"README.md: a paragraph of {words} words (at most 150): {lines[0][:60]}")
    perf = read(os.path.join(ROOT, "docs/PERF.md")).splitlines()
    if len(perf) > 250:
        bad.append(f"docs/PERF.md: {len(perf)} lines (at most 250)")
    return bad


def check_examples(files, python):
    bad = []
    for f in sorted(f for f in files if f.startswith("examples/") and f.endswith(".py")):
        try:
            run = subprocess.run([python, f, "--help"], cwd=ROOT, capture_output=True, text=True,
                                 timeout=120)
            if run.returncode != 0:
                bad.append(f"{f} --help: exit status {run.returncode}: {run.stderr.strip()[-200:]}")
        except subprocess.TimeoutExpired:
            bad.append(f"{f} --help: no answer within 120 s")
    return bad


def check_perf_help(build_dir):
    doc = read(os.path.join(ROOT, "docs/BENCHMARKS.md"))
    m = re.search(re.escape(HELP_BEGIN) + r"\n```text\n(.*?)\n```\n" + re.escape(HELP_END), doc, re.S)
    if not m:
        return ["docs/BENCHMARKS.md: no perf-tool help block"]
    bad = []
    for tool in PERF_TOOLS:
        exe = os.path.join(build_dir, "bench", f"{tool}_perf")
        if not os.path.exists(exe):
            bad.append(f"{exe} is missing: build the perf tools first")
            continue
        got = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60).stdout
        if got.rstrip("\n").replace(f"{tool}_perf", "all_reduce_perf") != m.group(1):
            bad.append(f"docs/BENCHMARKS.md: the flag reference differs from {tool}_perf --help")
    return bad


def self_test(code, source):
    """Planted faults, each of which the checks must find."""
    planted = ("See src/core/no_such_file.cc and set SMDDP_NO_SUCH_VARIABLE.\n\n"
               "```error\nthe flux capacitor overheated at …\n```\n")
    found = (check_paths("planted", planted, "")
             + check_variables("planted", planted, code)
             + check_messages("planted", planted, source))
    wanted = ("no_such_file.cc does not exist", "SMDDP_NO_SUCH_VARIABLE is not read",
              "'the flux capacitor overheated at ' is not in the source")
    missed = [w for w in wanted if not any(w in f for f in found)]
    return [f"check_docs self-test: a planted fault was not caught: {w}" for w in missed]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--python", default=None, help="runs the examples' --help (skipped without)")
    args = ap.parse_args()
    files = git_files()
    code = "".join(read(os.path.join(ROOT, f)) for f in files
                   if not f.endswith(".md") and not f.startswith("docs/") and
                   f != "scripts/check_docs.py")
    source = source_text(files)
    bad = self_test(code, source)
    for f in doc_files(files):
        text = read(os.path.join(ROOT, f))
        bad += check_paths(f, text, os.path.dirname(f))
        bad += check_variables(f, text, code)
        bad += check_messages(f, text, source)
    for f, text in example_docstrings(files).items():
        bad += check_paths(f, text, os.path.dirname(f))
        bad += check_variables(f, text, code)
    bad += check_config_documented() + check_version() + check_sizes()
    bad += check_perf_help(args.build_dir)
    if args.python:
        bad += check_examples(files, args.python)
    for line in bad:
        print(line)
    if not bad:
        print("docs: ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
