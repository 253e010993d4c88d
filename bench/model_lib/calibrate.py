# SPDX-License-Identifier: Apache-2.0
"""Fits a Machine's free parameters to measured all_reduce times (bench/testbed's rows).

The model's time is linear in (net_alpha, net_beta, arena_alpha) once the copy rate and gamma are
fixed: T = a net_alpha + b net_beta + c arena_alpha + d, with the coefficients read off the model
itself (costs evaluated at unit parameters). net_alpha and net_beta are fitted; the arena's
synchronisation time stays the prior (the network's latency hides it on a testbed). The fit minimises the squared relative error over
the calibration rows (weights 1 / measured time), so 8 B and 16 MiB count alike. net_eff is then
1 / (net_beta x net_rate): the fraction of the link's rate a transfer got.
Invariant: uses only the rows it is given; every parameter it returns is positive.
"""
from . import costs


def _coefficients(m, algorithm, size):
    run = costs.ALGORITHMS[algorithm]
    base = dict(net_alpha=0.0, net_rate=1e30, net_eff=1.0, arena_alpha=0.0)
    d = run(costs.scaled(m, **base), size)
    a = run(costs.scaled(m, **dict(base, net_alpha=1.0)), size) - d
    b = run(costs.scaled(m, **dict(base, net_rate=1.0)), size) - d
    c = run(costs.scaled(m, **dict(base, arena_alpha=1.0)), size) - d
    return a, b, c, d


def fit(m, rows):
    """rows: [{size, time_us, algorithm}]. Returns m with net_alpha and net_eff fitted (the
    arena's synchronisation time, which the network's latency hides on a testbed, kept)."""
    s = [[0.0, 0.0], [0.0, 0.0]]
    v = [0.0, 0.0]
    for r in rows:
        t = r["time_us"] * 1e-6
        a, b, c, d = _coefficients(m, r["algorithm"], r["size"])
        x = [a / t, b / t]
        y = (t - d - c * m.arena_alpha) / t
        for i in range(2):
            v[i] += x[i] * y
            for j in range(2):
                s[i][j] += x[i] * x[j]
    det = s[0][0] * s[1][1] - s[0][1] * s[1][0]
    if abs(det) < 1e-300:
        raise ValueError("calibration rows do not determine the parameters (one size?)")
    alpha = (v[0] * s[1][1] - v[1] * s[0][1]) / det
    beta = (s[0][0] * v[1] - s[1][0] * v[0]) / det
    if alpha <= 0 or beta <= 0:
        raise ValueError(f"calibration gave non-positive costs (alpha {alpha}, beta {beta})")
    return costs.scaled(m, net_alpha=alpha, net_eff=1.0 / (beta * m.net_rate))


def predict(m, rows):
    """Each row with the model's time and its relative error (model / measured - 1)."""
    out = []
    for r in rows:
        t = costs.ALGORITHMS[r["algorithm"]](m, r["size"])
        out.append(dict(r, model_us=t * 1e6, error=t / (r["time_us"] * 1e-6) - 1.0))
    return out
