# SPDX-License-Identifier: Apache-2.0
"""Fits a Machine's free parameters to measured all_reduce times (bench/testbed's rows).

With the copy rate, gamma and the arena's synchronisation time fixed (priors: the network's
latency hides the arena on a testbed), a call's time (costs.time) is, per row, one of two linear
forms in (net_alpha, net_beta): its latency plus the wire bytes beyond the link's burst
(a net_alpha + c arena_alpha + d + max(0, wire - burst) net_beta), or its busiest link's bytes
(busiest net_beta), whichever is larger; the coefficients are read off the model itself (costs
evaluated at unit parameters). The fit takes each row's larger form under the current estimate,
solves the least squares on relative error (weights 1 / measured time, so 8 B and 16 MiB count
alike), and repeats until no row changes form. net_eff is then 1 / (net_beta x net_rate): the
fraction of the link's rate a transfer got.
Invariant: uses only the rows it is given; every parameter it returns is positive.
"""
import math

from . import costs


def _forms(m, algorithm, size):
    """((a, b, c, d) of the latency form, (0, b, 0, 0) of the link-bound form) for one row."""
    base = dict(net_alpha=0.0, arena_alpha=0.0)
    latency = lambda **k: costs.parts(costs.scaled(m, **dict(base, **k)), algorithm, size)[0]
    d = latency()
    a = latency(net_alpha=1.0) - d
    c = latency(arena_alpha=1.0) - d
    _, wire, busiest = costs.parts(m, algorithm, size)
    if m.link_burst <= 0 or m.nodes == 1:
        return (a, wire, c, d), None
    return (a, max(0.0, wire - m.link_burst), c, d), (0.0, busiest, 0.0, 0.0)


def _solve(m, rows, forms):
    s = [[0.0, 0.0], [0.0, 0.0]]
    v = [0.0, 0.0]
    for r, (a, b, c, d) in zip(rows, forms):
        t = r["time_us"] * 1e-6
        x = [a / t, b / t]
        y = (t - d - c * m.arena_alpha) / t
        for i in range(2):
            v[i] += x[i] * y
            for j in range(2):
                s[i][j] += x[i] * x[j]
    det = s[0][0] * s[1][1] - s[0][1] * s[1][0]
    if abs(det) < 1e-300:
        raise ValueError("calibration rows do not determine the parameters (one size?)")
    return (v[0] * s[1][1] - v[1] * s[0][1]) / det, (s[0][0] * v[1] - s[1][0] * v[0]) / det


def fit(m, rows):
    """rows: [{size, time_us, algorithm}]. Returns m with net_alpha and net_eff fitted (the
    arena's synchronisation time kept)."""
    both = [_forms(m, r["algorithm"], r["size"]) for r in rows]
    value = lambda f, alpha, beta: f[0] * alpha + f[1] * beta + f[2] * m.arena_alpha + f[3]
    alpha, beta = m.net_alpha, m.net_beta()
    chosen = None
    for _ in range(50):
        pick = [1 if f[1] is not None and value(f[1], alpha, beta) > value(f[0], alpha, beta)
                else 0 for f in both]
        if pick == chosen:
            break
        chosen = pick
        forms = [f[k] for f, k in zip(both, chosen)]
        alpha, beta = _solve(m, rows, forms)
        if alpha <= 0 or beta <= 0 or not math.isfinite(alpha + beta):
            raise ValueError(f"calibration gave non-positive costs (alpha {alpha}, beta {beta})")
    return costs.scaled(m, net_alpha=alpha, net_eff=1.0 / (beta * m.net_rate))


def predict(m, rows):
    """Each row with the model's time and its relative error (model / measured - 1)."""
    out = []
    for r in rows:
        t = costs.time(m, r["algorithm"], r["size"])
        out.append(dict(r, model_us=t * 1e6, error=t / (r["time_us"] * 1e-6) - 1.0))
    return out
