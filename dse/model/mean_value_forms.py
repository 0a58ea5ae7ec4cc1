"""The mean-value model's functions (dse.model.symbolic), generated: do not edit.

Written by `python scripts/generate_mean_value_forms.py` from dse.model.symbolic.step_expressions
(the schedule rules in sympy) by sympy's lambdify; tests/test_symbolic.py fails when this file
is not what the rules give now. Suffix: step-ahead, shadow sync, backtracking (0/1).
"""

from functools import reduce
from typing import Any

from numpy import maximum, minimum

A = Any


def latency_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (1 - pa)
    x1 = (D + Sy*x0 + W)
    x2 = (Lu + Tf + x1)
    return (B*(2*Lt + Ta + x2) + init + (-B + N)*(pa*x1 + x0*(Lt + x2)))


def energy_dyn_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (pa - 1)
    x1 = (-x0)
    return (N*wp*(Pp*pa + Pp*x1) + wd*(B*Sy + N*(D*pa + x1*(D + Sy)) + Sy*x0) + wt*(B*Ta + N*Tf*x1))


def wasted_j_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (0)


def latency_c0_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + Sy*x0 + W)
    return (pa*x1 + x0*(Lt + Lu + Tf + x1))


def latency_cB_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + Sy*x0 + W)
    x2 = (Lu + Tf + x1)
    return (2*Lt + Ta - pa*x1 - x0*(Lt + x2) + x2)


def energy_dyn_c0_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    return (Tf*wt*x0 + wd*(D*pa + x0*(D + Sy)) + wp*(Pp*pa + Pp*x0))


def energy_dyn_cB_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd + Ta*wt)


def latency_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (1 - pa)
    x1 = (D + W - x0*reduce(minimum, [0.0, P2 - Sy]))
    x2 = (Lu + P2 + Tf + x1)
    return (B*(2*Lt + Ta + x2) + init + (-B + N)*(pa*x1 + x0*(Lt + x2)))


def energy_dyn_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (pa - 1)
    x1 = (-x0)
    return (N*wp*(Pp*pa + x1*(P2 + Pp)) + wd*(B*Sy + N*(D*pa + x1*(D + Sy)) + Sy*x0) + wt*(B*Ta +
        N*Tf*x1))


def wasted_j_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (0)


def latency_c0_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + W - x0*reduce(minimum, [0.0, P2 - Sy]))
    return (pa*x1 + x0*(Lt + Lu + P2 + Tf + x1))


def latency_cB_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + W - x0*reduce(minimum, [0.0, P2 - Sy]))
    x2 = (Lu + P2 + Tf + x1)
    return (2*Lt + Ta - pa*x1 - x0*(Lt + x2) + x2)


def energy_dyn_c0_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    return (Tf*wt*x0 + wd*(D*pa + x0*(D + Sy)) + wp*(Pp*pa + x0*(P2 + Pp)))


def energy_dyn_cB_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd + Ta*wt)


def latency_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (1 - pa)
    x1 = (D + W)
    x2 = (Lu + Tf)
    x3 = (Lt + x2)
    x4 = (x1 + x3)
    x5 = (-x0*reduce(minimum, [0.0, x4 - reduce(maximum, [Sy + x1, a1 + x4])]) + x1)
    return (B*(2*Lt + Ta + x2 + x5) + init + (-B + N)*(pa*x5 + x0*(x3 + x5)))


def energy_dyn_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (pa - 1)
    x1 = (-x0)
    return (N*wp*(Pp*pa + Pp*x1) + wd*(B*Sy + N*(D*pa + x1*(D + Sy)) + Sy*x0) + wt*(B*Ta + N*Tf*x1))


def wasted_j_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (0)


def latency_c0_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + W)
    x2 = (Lt + Lu + Tf)
    x3 = (x1 + x2)
    x4 = (-x0*reduce(minimum, [0.0, x3 - reduce(maximum, [Sy + x1, a1 + x3])]) + x1)
    return (pa*x4 + x0*(x2 + x4))


def latency_cB_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + W)
    x2 = (Lu + Tf)
    x3 = (Lt + x2)
    x4 = (x1 + x3)
    x5 = (-x0*reduce(minimum, [0.0, x4 - reduce(maximum, [Sy + x1, a1 + x4])]) + x1)
    return (2*Lt + Ta - pa*x5 - x0*(x3 + x5) + x2 + x5)


def energy_dyn_c0_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    return (Tf*wt*x0 + wd*(D*pa + x0*(D + Sy)) + wp*(Pp*pa + Pp*x0))


def energy_dyn_cB_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd + Ta*wt)


def latency_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (Lu + Tf)
    x1 = (1 - pa)
    x2 = (D + W)
    x3 = (Lt + x0)
    x4 = (x2 + x3)
    x5 = (-x1*reduce(minimum, [0.0, P2 + x4 - reduce(maximum, [Sy + x2, a1 + x4])]) + x2)
    x6 = (P2 + x5)
    return (B*(2*Lt + Ta + x0 + x6) + init + (-B + N)*(pa*x5 + x1*(x3 + x6)))


def energy_dyn_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (pa - 1)
    x1 = (-x0)
    return (N*wp*(Pp*pa + x1*(P2 + Pp)) + wd*(B*Sy + N*(D*pa + x1*(D + Sy)) + Sy*x0) + wt*(B*Ta +
        N*Tf*x1))


def wasted_j_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (0)


def latency_c0_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + W)
    x2 = (Lt + Lu + Tf)
    x3 = (x1 + x2)
    x4 = (-x0*reduce(minimum, [0.0, P2 + x3 - reduce(maximum, [Sy + x1, a1 + x3])]) + x1)
    return (pa*x4 + x0*(P2 + x2 + x4))


def latency_cB_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + W)
    x2 = (Lu + Tf)
    x3 = (Lt + x2)
    x4 = (x1 + x3)
    x5 = (-x0*reduce(minimum, [0.0, P2 + x4 - reduce(maximum, [Sy + x1, a1 + x4])]) + x1)
    x6 = (P2 + x5)
    return (2*Lt + Ta - pa*x5 - x0*(x3 + x6) + x2 + x6)


def energy_dyn_c0_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    return (Tf*wt*x0 + wd*(D*pa + x0*(D + Sy)) + wp*(Pp*pa + x0*(P2 + Pp)))


def energy_dyn_cB_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd + Ta*wt)


def latency_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (1 - pa)
    x1 = (D + Sy*x0 + W - pa*reduce(minimum, [D, W]))
    x2 = (reduce(maximum, [x1, Lu + Tf]))
    return (B*(2*Lt + Ta + x2) + init + (-B + N)*(pa*x1 + x0*(Lt + x2)))


def energy_dyn_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (pa - 1)
    x1 = (-x0)
    return (N*wp*(Pp*pa + Pp*x1) + wd*(B*Sy + N*(D*pa + x1*(D + Sy)) + Sy*x0) + wt*(B*Ta + N*(Tf*x1
        + pa*reduce(minimum, [Tf, reduce(maximum, [0.0, D - Lu + W - reduce(minimum, [D, W])])]))))


def wasted_j_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wd*(1 - pa)*reduce(minimum, [D, W]))


def latency_c0_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + Sy*x0 + W - pa*reduce(minimum, [D, W]))
    return (pa*x1 + x0*(Lt + reduce(maximum, [x1, Lu + Tf])))


def latency_cB_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + Sy*x0 + W - pa*reduce(minimum, [D, W]))
    x2 = (reduce(maximum, [x1, Lu + Tf]))
    return (2*Lt + Ta - pa*x1 - x0*(Lt + x2) + x2)


def energy_dyn_c0_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    return (wd*(D*pa + x0*(D + Sy)) + wp*(Pp*pa + Pp*x0) + wt*(Tf*x0 + pa*reduce(minimum, [Tf,
        reduce(maximum, [0.0, D - Lu + W - reduce(minimum, [D, W])])])))


def energy_dyn_cB_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd + Ta*wt)


def latency_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (1 - pa)
    x1 = (D + W - pa*reduce(minimum, [D, W]) - x0*reduce(minimum, [D, P2 - Sy]))
    x2 = (P2 + reduce(maximum, [x1, Lu + Tf]))
    return (B*(2*Lt + Ta + x2) + init + (-B + N)*(pa*x1 + x0*(Lt + x2)))


def energy_dyn_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (pa - 1)
    x1 = (-x0)
    return (N*wp*(Pp*pa + x1*(P2 + Pp)) + wd*(B*Sy + N*(D*pa + x1*(D + Sy)) + Sy*x0) + wt*(B*Ta +
        N*(Tf*x1 + pa*reduce(minimum, [Tf, reduce(maximum, [0.0, D - Lu + W - reduce(minimum, [D,
        W])])]))))


def wasted_j_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wd*(1 - pa)*reduce(minimum, [D, W]))


def latency_c0_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + W - pa*reduce(minimum, [D, W]) - x0*reduce(minimum, [D, P2 - Sy]))
    return (pa*x1 + x0*(Lt + P2 + reduce(maximum, [x1, Lu + Tf])))


def latency_cB_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + W - pa*reduce(minimum, [D, W]) - x0*reduce(minimum, [D, P2 - Sy]))
    x2 = (P2 + reduce(maximum, [x1, Lu + Tf]))
    return (2*Lt + Ta - pa*x1 - x0*(Lt + x2) + x2)


def energy_dyn_c0_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    return (wd*(D*pa + x0*(D + Sy)) + wp*(Pp*pa + x0*(P2 + Pp)) + wt*(Tf*x0 + pa*reduce(minimum,
        [Tf, reduce(maximum, [0.0, D - Lu + W - reduce(minimum, [D, W])])])))


def energy_dyn_cB_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd + Ta*wt)


def latency_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (Lu + Tf)
    x1 = (1 - pa)
    x2 = (D + W)
    x3 = (Lt + reduce(maximum, [x0, x2]))
    x4 = (-pa*reduce(minimum, [D, W]) - x1*reduce(minimum, [D, x3 - reduce(maximum, [Sy + x2, a1 +
        x3])]) + x2)
    x5 = (reduce(maximum, [x0, x4]))
    return (B*(2*Lt + Ta + x5) + init + (-B + N)*(pa*x4 + x1*(Lt + x5)))


def energy_dyn_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (pa - 1)
    x1 = (-x0)
    return (N*wp*(Pp*pa + Pp*x1) + wd*(B*Sy + N*(D*pa + x1*(D + Sy)) + Sy*x0) + wt*(B*Ta + N*(Tf*x1
        + pa*reduce(minimum, [Tf, reduce(maximum, [0.0, D - Lu + W - reduce(minimum, [D, W])])]))))


def wasted_j_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wd*(1 - pa)*reduce(minimum, [D, W]))


def latency_c0_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + W)
    x2 = (Lu + Tf)
    x3 = (Lt + reduce(maximum, [x1, x2]))
    x4 = (-pa*reduce(minimum, [D, W]) - x0*reduce(minimum, [D, x3 - reduce(maximum, [Sy + x1, a1 +
        x3])]) + x1)
    return (pa*x4 + x0*(Lt + reduce(maximum, [x2, x4])))


def latency_cB_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + W)
    x2 = (Lu + Tf)
    x3 = (Lt + reduce(maximum, [x1, x2]))
    x4 = (-pa*reduce(minimum, [D, W]) - x0*reduce(minimum, [D, x3 - reduce(maximum, [Sy + x1, a1 +
        x3])]) + x1)
    x5 = (reduce(maximum, [x2, x4]))
    return (2*Lt + Ta - pa*x4 - x0*(Lt + x5) + x5)


def energy_dyn_c0_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    return (wd*(D*pa + x0*(D + Sy)) + wp*(Pp*pa + Pp*x0) + wt*(Tf*x0 + pa*reduce(minimum, [Tf,
        reduce(maximum, [0.0, D - Lu + W - reduce(minimum, [D, W])])])))


def energy_dyn_cB_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd + Ta*wt)


def latency_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (Lu + Tf)
    x1 = (1 - pa)
    x2 = (D + W)
    x3 = (Lt + reduce(maximum, [x0, x2]))
    x4 = (-pa*reduce(minimum, [D, W]) - x1*reduce(minimum, [D, P2 + x3 - reduce(maximum, [Sy + x2,
        a1 + x3])]) + x2)
    x5 = (P2 + reduce(maximum, [x0, x4]))
    return (B*(2*Lt + Ta + x5) + init + (-B + N)*(pa*x4 + x1*(Lt + x5)))


def energy_dyn_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    x0 = (pa - 1)
    x1 = (-x0)
    return (N*wp*(Pp*pa + x1*(P2 + Pp)) + wd*(B*Sy + N*(D*pa + x1*(D + Sy)) + Sy*x0) + wt*(B*Ta +
        N*(Tf*x1 + pa*reduce(minimum, [Tf, reduce(maximum, [0.0, D - Lu + W - reduce(minimum, [D,
        W])])]))))


def wasted_j_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wd*(1 - pa)*reduce(minimum, [D, W]))


def latency_c0_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + W)
    x2 = (Lu + Tf)
    x3 = (Lt + reduce(maximum, [x1, x2]))
    x4 = (-pa*reduce(minimum, [D, W]) - x0*reduce(minimum, [D, P2 + x3 - reduce(maximum, [Sy + x1,
        a1 + x3])]) + x1)
    return (pa*x4 + x0*(Lt + P2 + reduce(maximum, [x2, x4])))


def latency_cB_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    x1 = (D + W)
    x2 = (Lu + Tf)
    x3 = (Lt + reduce(maximum, [x1, x2]))
    x4 = (-pa*reduce(minimum, [D, W]) - x0*reduce(minimum, [D, P2 + x3 - reduce(maximum, [Sy + x1,
        a1 + x3])]) + x1)
    x5 = (P2 + reduce(maximum, [x2, x4]))
    return (2*Lt + Ta - pa*x4 - x0*(Lt + x5) + x5)


def energy_dyn_c0_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    x0 = (1 - pa)
    return (wd*(D*pa + x0*(D + Sy)) + wp*(Pp*pa + x0*(P2 + Pp)) + wt*(Tf*x0 + pa*reduce(minimum,
        [Tf, reduce(maximum, [0.0, D - Lu + W - reduce(minimum, [D, W])])])))


def energy_dyn_cB_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd + Ta*wt)


# (step_ahead, shadow, backtracking) -> the linear forms' coefficients
LINEAR = {
    (False, False, False): {"latency": (latency_c0_000, latency_cN_000, latency_cB_000),
                         "energy_dyn": (energy_dyn_c0_000, energy_dyn_cN_000, energy_dyn_cB_000)},
    (False, False, True): {"latency": (latency_c0_001, latency_cN_001, latency_cB_001),
                         "energy_dyn": (energy_dyn_c0_001, energy_dyn_cN_001, energy_dyn_cB_001)},
    (False, True, False): {"latency": (latency_c0_010, latency_cN_010, latency_cB_010),
                         "energy_dyn": (energy_dyn_c0_010, energy_dyn_cN_010, energy_dyn_cB_010)},
    (False, True, True): {"latency": (latency_c0_011, latency_cN_011, latency_cB_011),
                         "energy_dyn": (energy_dyn_c0_011, energy_dyn_cN_011, energy_dyn_cB_011)},
    (True, False, False): {"latency": (latency_c0_100, latency_cN_100, latency_cB_100),
                         "energy_dyn": (energy_dyn_c0_100, energy_dyn_cN_100, energy_dyn_cB_100)},
    (True, False, True): {"latency": (latency_c0_101, latency_cN_101, latency_cB_101),
                         "energy_dyn": (energy_dyn_c0_101, energy_dyn_cN_101, energy_dyn_cB_101)},
    (True, True, False): {"latency": (latency_c0_110, latency_cN_110, latency_cB_110),
                         "energy_dyn": (energy_dyn_c0_110, energy_dyn_cN_110, energy_dyn_cB_110)},
    (True, True, True): {"latency": (latency_c0_111, latency_cN_111, latency_cB_111),
                         "energy_dyn": (energy_dyn_c0_111, energy_dyn_cN_111, energy_dyn_cB_111)},
}
# (step_ahead, shadow, backtracking) -> the metrics of (COMPONENTS, PROBS, COUNTS)
METRICS = {
    (False, False, False): {"latency": latency_000, "energy_dyn": energy_dyn_000,
                         "wasted_j": wasted_j_000},
    (False, False, True): {"latency": latency_001, "energy_dyn": energy_dyn_001,
                         "wasted_j": wasted_j_001},
    (False, True, False): {"latency": latency_010, "energy_dyn": energy_dyn_010,
                         "wasted_j": wasted_j_010},
    (False, True, True): {"latency": latency_011, "energy_dyn": energy_dyn_011,
                         "wasted_j": wasted_j_011},
    (True, False, False): {"latency": latency_100, "energy_dyn": energy_dyn_100,
                         "wasted_j": wasted_j_100},
    (True, False, True): {"latency": latency_101, "energy_dyn": energy_dyn_101,
                         "wasted_j": wasted_j_101},
    (True, True, False): {"latency": latency_110, "energy_dyn": energy_dyn_110,
                         "wasted_j": wasted_j_110},
    (True, True, True): {"latency": latency_111, "energy_dyn": energy_dyn_111,
                         "wasted_j": wasted_j_111},
}
