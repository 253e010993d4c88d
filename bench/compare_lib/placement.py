# SPDX-License-Identifier: Apache-2.0
"""Where the host has put this machine's CPUs, probed before and after every cell: the cache-line
round trip between the first two usable CPUs (bench/limits/line_rtt.c, 300000 round trips, 40 ms
a probe while they share a cache).

On a virtual machine the host may move the guest's CPUs between its own cores while a run goes
on. Measured here (docs/PERF.md): the round trip is 0.10-0.16 us while the two CPUs share a
last-level cache, 0.05-0.07 us on one core's two hardware threads, and 0.56-0.63 us when they do
not share it; a 1 MiB in-place broadcast through the arena then takes 114-125 us instead of
23-47, for as long as the placement lasts (tens of ms to seconds), in every process alike. A
round of a cell whose probes read more than FAR_FACTOR x the run's median probe is "far".
Medians keep every round; the far rounds are listed, and each row also carries its median over
the near rounds, so that a reader can tell the host's placement from the code's speed.

Invariant: probing never raises; without a C compiler, or when the tool fails, a probe is None
and flags nothing.
"""
import statistics

from . import limits

FAR_FACTOR = 1.6
PROBE_ARGS = ["-n", "300000", "-r", "1"]


class PlacementProbe:
    def __init__(self, bindir):
        exe = limits.build_tool(bindir, "line_rtt", limits.LINE_RTT_FLAGS)  # the limits' binary
        self.exe = None if isinstance(exe, dict) else exe

    def sample(self):
        """The round trip in ns now, or None."""
        if self.exe is None:
            return None
        try:
            return float(limits.run_tool(self.exe, PROBE_ARGS, timeout=30)["line_rtt_ns"])
        except (OSError, KeyError, TypeError, ValueError):
            return None


def _probes(cells):
    return sorted(p for c in cells for rnd in c.get("placement_ns", []) for p in rnd if p)


def _limit(probes):
    return FAR_FACTOR * statistics.median(probes) if probes else None


def threshold(cells):
    """FAR_FACTOR x the median of every probe of the run; None without probes."""
    return _limit(_probes(cells))


def far_rounds(cell, limit):
    """Indices of the cell's rounds with a probe above `limit`."""
    if limit is None:
        return []
    return [k for k, rnd in enumerate(cell.get("placement_ns", []))
            if any(p and p > limit for p in rnd)]


def markdown(cells):
    """A short section: the probes' spread and every cell with far rounds."""
    probes = _probes(cells)
    limit = _limit(probes)
    if limit is None:
        return "**Host placement**: not probed (no C compiler, or line_rtt failed)\n"
    lines = [f"**Host placement**: {len(probes)} cache-line round-trip probes, "
             f"{probes[0]:.0f} / {statistics.median(probes):.0f} / {probes[-1]:.0f} ns "
             f"(min / median / max); far = above {limit:.0f} ns "
             f"({FAR_FACTOR} x the median).", ""]
    far = [(c, far_rounds(c, limit)) for c in cells]
    far = [(c, ks) for c, ks in far if ks]
    if not far:
        return "\n".join(lines + ["No cell ran a round in a far placement.", ""])
    lines += ["| world | collective | dtype | backend | far rounds | their probes, ns |",
              "|---|---|---|---|---|---|"]
    for c, ks in far:
        worst = ", ".join(f"{max(p for p in c['placement_ns'][k] if p):.0f}" for k in ks)
        lines.append(f"| {c['world']} | {c['collective']} | {c['dtype']} | {c['backend']} | "
                     f"{', '.join(str(k + 1) for k in ks)} of {len(c['placement_ns'])} | "
                     f"{worst} |")
    return "\n".join(lines) + "\n"
