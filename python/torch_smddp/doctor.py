# SPDX-License-Identifier: Apache-2.0
"""The hang doctor: reads every rank's flight-recorder dump (SMDDP_DUMP_ON_TIMEOUT=DIR/PREFIX
writes DIR/PREFIX.<rank>) and says, in a few lines, what each rank was doing at the end, which
rank died or stopped, which ranks are behind (in which collective and sequence number) and which
called a different collective or different arguments.

    python -m torch_smddp.doctor DIR [--prefix NAME] [--torch-trace OUT]
    python python/torch_smddp/doctor.py DIR          (no torch needed: this file alone)

--torch-trace OUT also writes the dumps as torch's flight-recorder traces (doctor_torch.py), for
python -m torch.distributed.flight_recorder.fr_trace OUT.

Exit status: 1 when it names a culprit, 0 when it finds nothing wrong, 2 when the input cannot be
read (no dump, or a file that is not one).
Invariant: standard library only, and nothing imported from the package but doctor_torch.py (the
same), so it runs on a laptop holding the dumps without torch or the extension. A rank that wrote
no dump (SIGSTOPped, killed, or waiting elsewhere) is seen through its peers' beacons of it, read
when they dumped.
"""
import argparse
import os
import re
import sys
from collections import Counter, defaultdict

_HEADER = re.compile(r"smddp flight recorder: rank (\d+) of (\d+) \((.*), pid (\d+)\), (.*)$")
_BEACON = re.compile(r"rank (\d+)(?: \((.*)\))?: (.*)$")
_PEER = re.compile(r"heartbeat (\d+), called (\d+), completed (\d+)(?:, last called #(\d+) (.*))?$")
_ENTRY = re.compile(r"#(\d+)  (.*?)(?: \[([^\]]*)\])?  (empty|queued|running|done|failed)  "
                    r"posted at (-?[\d.]+) ms(?:, started after (-?[\d.]+) ms)?"
                    r"(?:, ran (-?[\d.]+) ms)?$")
_GONE = re.compile(r"rank (\d+)(?: \([^)]*\))? is gone")
_DEFAULT_PREFIX = None  # every file named <anything>.<rank> that reads as a dump


class DumpError(Exception):
    """A file that is not a flight-recorder dump, or no dump at all."""


class Entry:
    def __init__(self, seq, call, algorithm, state, ran_ms, posted_ms=None, started_ms=None):
        self.seq, self.call, self.algorithm = seq, call, algorithm
        self.state, self.ran_ms = state, ran_ms
        self.posted_ms, self.started_ms = posted_ms, started_ms  # ms: since creation, after post
        self.error = ""

    @property
    def kind(self):
        return self.call.split("(", 1)[0]


class Dump:
    """One rank's dump: header, error, its beacons of each peer, its last collectives."""

    def __init__(self, path):
        self.path = path
        self.beacons = {}  # peer -> dict(heartbeat, called, completed, last_seq, last_call) or None
        self.hosts = {}
        self.entries = []
        self.parse(path)

    def parse(self, path):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError as e:
            raise DumpError(f"{path}: {e.strerror}") from e
        m = _HEADER.match(lines[0]) if lines else None
        if m is None:
            raise DumpError(f"{path}: not an smddp flight-recorder dump (no header line)")
        self.rank, self.world, self.host, self.pid = int(m[1]), int(m[2]), m[3], int(m[4])
        self.hosts[self.rank] = self.host
        has_error = len(lines) > 1 and lines[1].startswith("error: ")
        self.error = lines[1][len("error: "):] if has_error else ""
        section = None
        for line in lines[2:]:
            if line.startswith("-- progress beacons"):
                section = "beacons"
            elif line.startswith("-- last "):
                section = "entries"
            elif section == "beacons":
                self._beacon(line)
            elif section == "entries":
                if line.startswith("    error: ") and self.entries:
                    self.entries[-1].error = line[len("    error: "):]
                    continue
                e = _ENTRY.match(line)
                if e:
                    ran, started = (float(x) if x else None for x in (e[7], e[6]))
                    self.entries.append(Entry(int(e[1]), e[2], e[3], e[4], ran, float(e[5]),
                                              started))

    def _beacon(self, line):
        b = _BEACON.match(line)
        if b is None:
            return
        peer = int(b[1])
        if b[2]:
            self.hosts[peer] = b[2]
        p = _PEER.match(b[3])
        if p:
            self.beacons[peer] = {"heartbeat": int(p[1]), "called": int(p[2]),
                                  "completed": int(p[3]),
                                  "last_seq": int(p[4]) if p[4] else None, "last_call": p[5]}
        elif b[3] == "no beacon":
            self.beacons[peer] = None

    def last(self):
        return self.entries[-1] if self.entries else None


class RankView:
    """What is known of one rank at the end: from its own dump, else from its peers' beacons."""

    def __init__(self, rank):
        self.rank, self.dump, self.host = rank, None, ""
        self.called = self.completed = None  # counts: seqs 0..called-1 were posted
        self.calls = {}  # seq -> call text (without the algorithm)
        self.beacon_from = None  # the peer whose beacon of this rank was used

    def who(self):
        return f"rank {self.rank}" + (f" ({self.host})" if self.host else "")


def load(directory, prefix=_DEFAULT_PREFIX):
    """Every dump in `directory` (named <prefix>.<rank>), by rank."""
    try:
        names = sorted(os.listdir(directory))
    except OSError as e:
        raise DumpError(f"{directory}: {e.strerror}") from e
    dumps = {}
    for name in names:
        stem, _, suffix = name.rpartition(".")
        if not suffix.isdigit() or not stem or (prefix is not None and stem != prefix):
            continue
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            continue
        try:
            d = Dump(path)
        except DumpError:
            if prefix is not None:
                raise
            continue  # not a dump: some other numbered file
        if d.rank in dumps:
            raise DumpError(f"{path} and {dumps[d.rank].path} are both rank {d.rank}'s: "
                            "give --prefix")
        dumps[d.rank] = d
    if not dumps:
        raise DumpError(f"{directory}: no flight-recorder dump"
                        + (f" named {prefix}.<rank>" if prefix else ""))
    return dumps


def views(dumps):
    world = max(d.world for d in dumps.values())
    out = {r: RankView(r) for r in range(world)}
    for d in dumps.values():
        for r, host in d.hosts.items():
            if r in out and host:
                out[r].host = host
    for r, v in out.items():
        d = dumps.get(r)
        if d is not None:
            v.dump = d
            v.called = max((e.seq + 1 for e in d.entries), default=0)
            v.completed = 0
            for e in d.entries:
                v.calls[e.seq] = e.call
                if e.state == "done" and e.seq + 1 > v.completed:
                    v.completed = e.seq + 1
            continue
        # The freshest beacon of r among its peers' dumps: the highest heartbeat.
        best = None
        for p, pd in sorted(dumps.items()):
            b = pd.beacons.get(r)
            if b is None:
                continue
            if best is None or b["heartbeat"] > best[1]["heartbeat"]:
                best = (p, b)
        if best is not None:
            v.beacon_from, b = best
            v.called, v.completed = b["called"], b["completed"]
            if b["last_seq"] is not None and b["last_call"]:
                v.calls[b["last_seq"]] = re.sub(r" \[[^\]]*\]$", "", b["last_call"])
    return out


def _ranks(rs):
    """'rank 3', 'ranks 0,1', 'ranks 0,2-5'."""
    rs, runs = sorted(rs), []
    for r in rs:
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    text = ",".join(str(a) if a == b else f"{a},{b}" if b == a + 1 else f"{a}-{b}"
                    for a, b in runs)
    return ("rank " if len(rs) == 1 else "ranks ") + text


def _grouped(vs):
    """One line per rank, or, for ranks that did the same thing, one line per group (a large job
    stays on one screen; the time each rank waited is left out of a group's line)."""
    groups = defaultdict(list)
    for v in vs.values():
        text = doing(v)
        groups[re.sub(r" after [\d.]+ s$", "", text[len(v.who()):])].append((v, text))
    lines = []
    for rest, members in sorted(groups.items(), key=lambda kv: kv[1][0][0].rank):
        if len(members) == 1:
            lines.append("  " + members[0][1])
        else:
            lines.append("  " + _ranks(v.rank for v, _ in members) + rest)
    return lines


def _names(vs, rs):
    """'rank 1 (host)' for one rank, 'ranks 0,2' for several."""
    rs = sorted(rs)
    return vs[rs[0]].who() if len(rs) == 1 and rs[0] in vs else _ranks(rs)


def _call_at(vs, seq):
    """The call most ranks made at seq (None when no one is known to have made it)."""
    texts = Counter(v.calls[seq] for v in vs.values() if seq in v.calls)
    return texts.most_common(1)[0][0] if texts else None


def _kind(call):
    return call.split("(", 1)[0] if call else "a collective"


def doing(v):
    """One line: what rank v was doing at the end."""
    if v.dump is not None:
        e = v.dump.last()
        if e is None:
            return f"{v.who()}: no collective recorded; error: {v.dump.error}"
        call = f"{e.kind} #{e.seq} {e.call[len(e.kind):]}"
        if e.state == "done":
            return f"{v.who()}: completed {call}, its last"
        ran = f" after {e.ran_ms / 1000:.1f} s" if e.ran_ms is not None else ""
        return f"{v.who()}: {e.state} in {call}{ran}"
    if v.called is None:
        return f"{v.who()}: no dump and no beacon (never started, or beacons off)"
    if not v.called:
        return f"{v.who()}: no dump; its beacon (read by rank {v.beacon_from}): called nothing yet"
    last = f"last called #{v.called - 1} {v.calls.get(v.called - 1, '')}".rstrip()
    state = "waiting in it" if v.completed < v.called else "completed it"
    return f"{v.who()}: no dump; its beacon (read by rank {v.beacon_from}): {last}, {state}"


def diagnose(dumps):
    """(lines, culprits): what each rank did, then the findings; culprits is a set of ranks."""
    vs = views(dumps)
    lines = [f"smddp doctor: {len(dumps)} dump(s) of {len(vs)} ranks"]
    lines += _grouped(vs) if len(vs) > 8 else ["  " + doing(v) for v in vs.values()]
    findings, culprits = [], set()

    # 1. Ranks that wrote no dump and that a peer declared gone: stopped or died.
    gone = defaultdict(set)
    for d in dumps.values():
        for m in _GONE.finditer(d.error):
            gone[int(m[1])].add(d.rank)
    for r in sorted(gone):
        v = vs.get(r)
        if v is None or v.dump is not None:
            continue
        if not v.called:
            where = " before its first collective" if v.called == 0 else ""
        elif v.completed < v.called:
            where = f" inside {_kind(v.calls.get(v.called - 1) or _call_at(vs, v.called - 1))} " \
                    f"#{v.called - 1}"
        else:
            nxt = _call_at(vs, v.called)
            where = f" after {_kind(v.calls.get(v.called - 1) or _call_at(vs, v.called - 1))} " \
                    f"#{v.called - 1}" + (f", before {_kind(nxt)} #{v.called}" if nxt else "")
        front = max((u.called for u in vs.values() if u.called is not None), default=0)
        waiting = sorted(u.rank for u in vs.values() if u.called == front and u.rank != r)
        said = v.called is not None and v.completed == v.called and v.called == front - 1
        if v.called is not None and v.called < front and waiting and not said:
            where += f" (by its last beacon), while {_names(vs, waiting)} wait in " \
                     f"{_kind(_call_at(vs, front - 1))} #{front - 1}"
        findings.append(f"{v.who()} stopped or died{where}: no dump, and "
                        f"{_names(vs, gone[r])} found it gone")
        culprits.add(r)

    # 2. Mismatch: the first seq where the ranks' calls differ.
    seqs = sorted({s for v in vs.values() for s in v.calls})
    for s in seqs:
        by_call = defaultdict(set)
        for v in vs.values():
            if s in v.calls:
                by_call[v.calls[s]].add(v.rank)
        if len(by_call) < 2:
            continue
        ordered = sorted(by_call.items(), key=lambda kv: (-len(kv[1]), min(kv[1])))
        major_call, major = ordered[0]
        tie = len(ordered[1][1]) == len(major)
        for call, rs in ordered[1:]:
            what = call if _kind(call) == _kind(major_call) else _kind(call)
            theirs = major_call if _kind(call) == _kind(major_call) else _kind(major_call)
            findings.append(f"{_names(vs, rs)} called {what} #{s} where {_names(vs, major)} called "
                            f"{theirs} #{s}" + (" (as many on each side: either may be wrong)"
                                                if tie else ""))
            culprits |= rs
        break

    # 3. Behind: ranks that did not call what the most advanced ranks called.
    known = {r: v for r, v in vs.items() if v.called is not None}
    if known:
        front = max(v.called for v in known.values())
        behind = {r for r, v in known.items() if v.called < front and r not in culprits}
        ahead = sorted(r for r, v in known.items() if v.called == front)
        by_at = defaultdict(set)
        for r in behind:
            by_at[known[r].called].add(r)
        for called, rs in sorted(by_at.items()):
            missed = _call_at(vs, called)
            at = f"at #{called - 1}" if called else "before #0"
            findings.append(f"{_names(vs, rs)} {'is' if len(rs) == 1 else 'are'} {at}, "
                            f"{_names(vs, ahead)} at #{front - 1}: "
                            f"{'it' if len(rs) == 1 else 'they'} did not call "
                            f"{_kind(missed)} #{called}" + (f" {missed[len(_kind(missed)):]}"
                                                           if missed else ""))
            culprits |= rs
    missing = [v for v in vs.values() if v.called is None]
    if missing and not culprits:
        findings.append(f"{_ranks([v.rank for v in missing])}: no dump and no beacon; "
                        "cannot tell what it did")

    if findings:
        lines.append("findings:")
        lines += ["  " + f for f in findings]
    else:
        lines.append("no culprit found: every rank called the same collectives up to the end")
    failed = [r for r, d in sorted(dumps.items()) if d.error]
    if failed:
        lines.append(f"error of rank {failed[0]}: {dumps[failed[0]].error}")
    if culprits:
        lines.append(f"culprit: {_ranks(culprits)}")
    return lines, culprits


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m torch_smddp.doctor",
                                 description="explain a hang from smddp flight-recorder dumps")
    ap.add_argument("directory", help="the folder of the dumps (SMDDP_DUMP_ON_TIMEOUT=DIR/NAME)")
    ap.add_argument("--prefix", default=None,
                    help="read only DIR/NAME.<rank> (default: every file that is a dump)")
    ap.add_argument("--torch-trace", metavar="OUT", default=None,
                    help="also write the dumps as torch flight-recorder traces "
                         "(OUT/smddp_trace_rank_<rank>)")
    args = ap.parse_args(argv)
    try:
        dumps = load(args.directory, args.prefix)
        lines, culprits = diagnose(dumps)
    except DumpError as e:
        print(f"smddp doctor: {e}", file=sys.stderr)
        return 2
    if args.torch_trace:
        try:
            from . import doctor_torch
        except ImportError:  # run as a file, or imported from its folder: no package
            import doctor_torch
        try:
            doctor_torch.write(dumps, args.torch_trace)
        except OSError as e:
            print(f"smddp doctor: {args.torch_trace}: {e.strerror}", file=sys.stderr)
            return 2
        partial = len(dumps) < max(d.world for d in dumps.values())
        print(f"smddp doctor: wrote the traces of {_ranks(dumps)} to {args.torch_trace}: "
              f"python -m torch.distributed.flight_recorder.fr_trace {args.torch_trace} --prefix "
              f"{doctor_torch.PREFIX}" + (" --allow-incomplete-ranks" if partial else ""),
              file=sys.stderr)
    print("\n".join(lines))
    return 1 if culprits else 0


if __name__ == "__main__":
    sys.exit(main())
