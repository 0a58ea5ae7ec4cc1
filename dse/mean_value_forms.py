"""The mean-value model's functions (dse.symbolic), generated: do not edit.

Written by `python scripts/generate_mean_value_forms.py` from dse.symbolic.step_expressions
(the schedule rules in sympy) by sympy's lambdify; tests/test_symbolic.py fails when this file
is not what the rules give now. Suffix: step-ahead, shadow sync, backtracking (0/1).
"""

from functools import reduce
from typing import Any

from numpy import maximum, minimum

A = Any


def latency_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (B*(D + 2*Lt + Lu + Sy*(1 - pa) + Ta + Tf + W) + init + (-B + N)*(pa*(D + Sy*(1 - pa) +
        W) + (1 - pa)*(D + Lt + Lu + Sy*(1 - pa) + Tf + W)))


def energy_dyn_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wp*(Pp*pa + Pp*(1 - pa)) + wd*(B*Sy + N*(D*pa + (1 - pa)*(D + Sy)) + Sy*(pa - 1)) +
        wt*(B*Ta + N*Tf*(1 - pa)))


def wasted_j_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (0)


def latency_c0_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (pa*(D + Sy*(1 - pa) + W) + (1 - pa)*(D + Lt + Lu + Sy*(1 - pa) + Tf + W))


def latency_cB_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (D + 2*Lt + Lu + Sy*(1 - pa) + Ta + Tf + W - pa*(D + Sy*(1 - pa) + W) - (1 - pa)*(D + Lt
        + Lu + Sy*(1 - pa) + Tf + W))


def energy_dyn_c0_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Tf*wt*(1 - pa) + wd*(D*pa + (1 - pa)*(D + Sy)) + wp*(Pp*pa + Pp*(1 - pa)))


def energy_dyn_cB_000(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd + Ta*wt)


def latency_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (B*(D + 2*Lt + Lu + P2 + Ta + Tf + W - (1 - pa)*reduce(minimum, [0.0, P2 - Sy])) + init +
        (-B + N)*(pa*(D + W - (1 - pa)*reduce(minimum, [0.0, P2 - Sy])) + (1 - pa)*(D + Lt + Lu + P2
        + Tf + W - (1 - pa)*reduce(minimum, [0.0, P2 - Sy]))))


def energy_dyn_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wp*(Pp*pa + (1 - pa)*(P2 + Pp)) + wd*(B*Sy + N*(D*pa + (1 - pa)*(D + Sy)) + Sy*(pa -
        1)) + wt*(B*Ta + N*Tf*(1 - pa)))


def wasted_j_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (0)


def latency_c0_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (pa*(D + W - (1 - pa)*reduce(minimum, [0.0, P2 - Sy])) + (1 - pa)*(D + Lt + Lu + P2 + Tf
        + W - (1 - pa)*reduce(minimum, [0.0, P2 - Sy])))


def latency_cB_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (D + 2*Lt + Lu + P2 + Ta + Tf + W - pa*(D + W - (1 - pa)*reduce(minimum, [0.0, P2 - Sy]))
        - (1 - pa)*(D + Lt + Lu + P2 + Tf + W - (1 - pa)*reduce(minimum, [0.0, P2 - Sy])) - (1 -
        pa)*reduce(minimum, [0.0, P2 - Sy]))


def energy_dyn_c0_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Tf*wt*(1 - pa) + wd*(D*pa + (1 - pa)*(D + Sy)) + wp*(Pp*pa + (1 - pa)*(P2 + Pp)))


def energy_dyn_cB_001(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd + Ta*wt)


def latency_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (B*(D + 2*Lt + Lu + Ta + Tf + W - (1 - pa)*reduce(minimum, [0.0, D + Lt + Lu + Tf + W -
        reduce(maximum, [D + Sy + W, D + Lt + Lu + Tf + W + a1])])) + init + (-B + N)*(pa*(D + W -
        (1 - pa)*reduce(minimum, [0.0, D + Lt + Lu + Tf + W - reduce(maximum, [D + Sy + W, D + Lt +
        Lu + Tf + W + a1])])) + (1 - pa)*(D + Lt + Lu + Tf + W - (1 - pa)*reduce(minimum, [0.0, D +
        Lt + Lu + Tf + W - reduce(maximum, [D + Sy + W, D + Lt + Lu + Tf + W + a1])]))))


def energy_dyn_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wp*(Pp*pa + Pp*(1 - pa)) + wd*(B*Sy + N*(D*pa + (1 - pa)*(D + Sy)) + Sy*(pa - 1)) +
        wt*(B*Ta + N*Tf*(1 - pa)))


def wasted_j_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (0)


def latency_c0_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (pa*(D + W - (1 - pa)*reduce(minimum, [0.0, D + Lt + Lu + Tf + W - reduce(maximum, [D +
        Sy + W, D + Lt + Lu + Tf + W + a1])])) + (1 - pa)*(D + Lt + Lu + Tf + W - (1 -
        pa)*reduce(minimum, [0.0, D + Lt + Lu + Tf + W - reduce(maximum, [D + Sy + W, D + Lt + Lu +
        Tf + W + a1])])))


def latency_cB_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (D + 2*Lt + Lu + Ta + Tf + W - pa*(D + W - (1 - pa)*reduce(minimum, [0.0, D + Lt + Lu +
        Tf + W - reduce(maximum, [D + Sy + W, D + Lt + Lu + Tf + W + a1])])) - (1 - pa)*(D + Lt + Lu
        + Tf + W - (1 - pa)*reduce(minimum, [0.0, D + Lt + Lu + Tf + W - reduce(maximum, [D + Sy +
        W, D + Lt + Lu + Tf + W + a1])])) - (1 - pa)*reduce(minimum, [0.0, D + Lt + Lu + Tf + W -
        reduce(maximum, [D + Sy + W, D + Lt + Lu + Tf + W + a1])]))


def energy_dyn_c0_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Tf*wt*(1 - pa) + wd*(D*pa + (1 - pa)*(D + Sy)) + wp*(Pp*pa + Pp*(1 - pa)))


def energy_dyn_cB_010(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd + Ta*wt)


def latency_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (B*(D + 2*Lt + Lu + P2 + Ta + Tf + W - (1 - pa)*reduce(minimum, [0.0, D + Lt + Lu + P2 +
        Tf + W - reduce(maximum, [D + Sy + W, D + Lt + Lu + Tf + W + a1])])) + init + (-B +
        N)*(pa*(D + W - (1 - pa)*reduce(minimum, [0.0, D + Lt + Lu + P2 + Tf + W - reduce(maximum,
        [D + Sy + W, D + Lt + Lu + Tf + W + a1])])) + (1 - pa)*(D + Lt + Lu + P2 + Tf + W - (1 -
        pa)*reduce(minimum, [0.0, D + Lt + Lu + P2 + Tf + W - reduce(maximum, [D + Sy + W, D + Lt +
        Lu + Tf + W + a1])]))))


def energy_dyn_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wp*(Pp*pa + (1 - pa)*(P2 + Pp)) + wd*(B*Sy + N*(D*pa + (1 - pa)*(D + Sy)) + Sy*(pa -
        1)) + wt*(B*Ta + N*Tf*(1 - pa)))


def wasted_j_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (0)


def latency_c0_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (pa*(D + W - (1 - pa)*reduce(minimum, [0.0, D + Lt + Lu + P2 + Tf + W - reduce(maximum,
        [D + Sy + W, D + Lt + Lu + Tf + W + a1])])) + (1 - pa)*(D + Lt + Lu + P2 + Tf + W - (1 -
        pa)*reduce(minimum, [0.0, D + Lt + Lu + P2 + Tf + W - reduce(maximum, [D + Sy + W, D + Lt +
        Lu + Tf + W + a1])])))


def latency_cB_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (D + 2*Lt + Lu + P2 + Ta + Tf + W - pa*(D + W - (1 - pa)*reduce(minimum, [0.0, D + Lt +
        Lu + P2 + Tf + W - reduce(maximum, [D + Sy + W, D + Lt + Lu + Tf + W + a1])])) - (1 - pa)*(D
        + Lt + Lu + P2 + Tf + W - (1 - pa)*reduce(minimum, [0.0, D + Lt + Lu + P2 + Tf + W -
        reduce(maximum, [D + Sy + W, D + Lt + Lu + Tf + W + a1])])) - (1 - pa)*reduce(minimum, [0.0,
        D + Lt + Lu + P2 + Tf + W - reduce(maximum, [D + Sy + W, D + Lt + Lu + Tf + W + a1])]))


def energy_dyn_c0_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Tf*wt*(1 - pa) + wd*(D*pa + (1 - pa)*(D + Sy)) + wp*(Pp*pa + (1 - pa)*(P2 + Pp)))


def energy_dyn_cB_011(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd + Ta*wt)


def latency_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (B*(2*Lt + Ta + reduce(maximum, [Lu + Tf, D + Sy*(1 - pa) + W - pa*reduce(minimum, [D,
        W])])) + init + (-B + N)*(pa*(D + Sy*(1 - pa) + W - pa*reduce(minimum, [D, W])) + (1 -
        pa)*(Lt + reduce(maximum, [Lu + Tf, D + Sy*(1 - pa) + W - pa*reduce(minimum, [D, W])]))))


def energy_dyn_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wp*(Pp*pa + Pp*(1 - pa)) + wd*(B*Sy + N*(D*pa + (1 - pa)*(D + Sy)) + Sy*(pa - 1)) +
        wt*(B*Ta + N*(Tf*(1 - pa) + pa*reduce(minimum, [Tf, reduce(maximum, [0.0, D - Lu + W -
        reduce(minimum, [D, W])])]))))


def wasted_j_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wd*(1 - pa)*reduce(minimum, [D, W]))


def latency_c0_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (pa*(D + Sy*(1 - pa) + W - pa*reduce(minimum, [D, W])) + (1 - pa)*(Lt + reduce(maximum,
        [Lu + Tf, D + Sy*(1 - pa) + W - pa*reduce(minimum, [D, W])])))


def latency_cB_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (2*Lt + Ta - pa*(D + Sy*(1 - pa) + W - pa*reduce(minimum, [D, W])) - (1 - pa)*(Lt +
        reduce(maximum, [Lu + Tf, D + Sy*(1 - pa) + W - pa*reduce(minimum, [D, W])])) +
        reduce(maximum, [Lu + Tf, D + Sy*(1 - pa) + W - pa*reduce(minimum, [D, W])]))


def energy_dyn_c0_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (wd*(D*pa + (1 - pa)*(D + Sy)) + wp*(Pp*pa + Pp*(1 - pa)) + wt*(Tf*(1 - pa) +
        pa*reduce(minimum, [Tf, reduce(maximum, [0.0, D - Lu + W - reduce(minimum, [D, W])])])))


def energy_dyn_cB_100(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd + Ta*wt)


def latency_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (B*(2*Lt + P2 + Ta + reduce(maximum, [Lu + Tf, D + W - pa*reduce(minimum, [D, W]) - (1 -
        pa)*reduce(minimum, [D, P2 - Sy])])) + init + (-B + N)*(pa*(D + W - pa*reduce(minimum, [D,
        W]) - (1 - pa)*reduce(minimum, [D, P2 - Sy])) + (1 - pa)*(Lt + P2 + reduce(maximum, [Lu +
        Tf, D + W - pa*reduce(minimum, [D, W]) - (1 - pa)*reduce(minimum, [D, P2 - Sy])]))))


def energy_dyn_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wp*(Pp*pa + (1 - pa)*(P2 + Pp)) + wd*(B*Sy + N*(D*pa + (1 - pa)*(D + Sy)) + Sy*(pa -
        1)) + wt*(B*Ta + N*(Tf*(1 - pa) + pa*reduce(minimum, [Tf, reduce(maximum, [0.0, D - Lu + W -
        reduce(minimum, [D, W])])]))))


def wasted_j_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wd*(1 - pa)*reduce(minimum, [D, W]))


def latency_c0_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (pa*(D + W - pa*reduce(minimum, [D, W]) - (1 - pa)*reduce(minimum, [D, P2 - Sy])) + (1 -
        pa)*(Lt + P2 + reduce(maximum, [Lu + Tf, D + W - pa*reduce(minimum, [D, W]) - (1 -
        pa)*reduce(minimum, [D, P2 - Sy])])))


def latency_cB_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (2*Lt + P2 + Ta - pa*(D + W - pa*reduce(minimum, [D, W]) - (1 - pa)*reduce(minimum, [D,
        P2 - Sy])) - (1 - pa)*(Lt + P2 + reduce(maximum, [Lu + Tf, D + W - pa*reduce(minimum, [D,
        W]) - (1 - pa)*reduce(minimum, [D, P2 - Sy])])) + reduce(maximum, [Lu + Tf, D + W -
        pa*reduce(minimum, [D, W]) - (1 - pa)*reduce(minimum, [D, P2 - Sy])]))


def energy_dyn_c0_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (wd*(D*pa + (1 - pa)*(D + Sy)) + wp*(Pp*pa + (1 - pa)*(P2 + Pp)) + wt*(Tf*(1 - pa) +
        pa*reduce(minimum, [Tf, reduce(maximum, [0.0, D - Lu + W - reduce(minimum, [D, W])])])))


def energy_dyn_cB_101(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd + Ta*wt)


def latency_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (B*(2*Lt + Ta + reduce(maximum, [Lu + Tf, D + W - pa*reduce(minimum, [D, W]) - (1 -
        pa)*reduce(minimum, [D, Lt + reduce(maximum, [D + W, Lu + Tf]) - reduce(maximum, [D + Sy +
        W, Lt + a1 + reduce(maximum, [D + W, Lu + Tf])])])])) + init + (-B + N)*(pa*(D + W -
        pa*reduce(minimum, [D, W]) - (1 - pa)*reduce(minimum, [D, Lt + reduce(maximum, [D + W, Lu +
        Tf]) - reduce(maximum, [D + Sy + W, Lt + a1 + reduce(maximum, [D + W, Lu + Tf])])])) + (1 -
        pa)*(Lt + reduce(maximum, [Lu + Tf, D + W - pa*reduce(minimum, [D, W]) - (1 -
        pa)*reduce(minimum, [D, Lt + reduce(maximum, [D + W, Lu + Tf]) - reduce(maximum, [D + Sy +
        W, Lt + a1 + reduce(maximum, [D + W, Lu + Tf])])])]))))


def energy_dyn_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wp*(Pp*pa + Pp*(1 - pa)) + wd*(B*Sy + N*(D*pa + (1 - pa)*(D + Sy)) + Sy*(pa - 1)) +
        wt*(B*Ta + N*(Tf*(1 - pa) + pa*reduce(minimum, [Tf, reduce(maximum, [0.0, D - Lu + W -
        reduce(minimum, [D, W])])]))))


def wasted_j_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wd*(1 - pa)*reduce(minimum, [D, W]))


def latency_c0_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (pa*(D + W - pa*reduce(minimum, [D, W]) - (1 - pa)*reduce(minimum, [D, Lt +
        reduce(maximum, [D + W, Lu + Tf]) - reduce(maximum, [D + Sy + W, Lt + a1 + reduce(maximum,
        [D + W, Lu + Tf])])])) + (1 - pa)*(Lt + reduce(maximum, [Lu + Tf, D + W - pa*reduce(minimum,
        [D, W]) - (1 - pa)*reduce(minimum, [D, Lt + reduce(maximum, [D + W, Lu + Tf]) -
        reduce(maximum, [D + Sy + W, Lt + a1 + reduce(maximum, [D + W, Lu + Tf])])])])))


def latency_cB_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (2*Lt + Ta - pa*(D + W - pa*reduce(minimum, [D, W]) - (1 - pa)*reduce(minimum, [D, Lt +
        reduce(maximum, [D + W, Lu + Tf]) - reduce(maximum, [D + Sy + W, Lt + a1 + reduce(maximum,
        [D + W, Lu + Tf])])])) - (1 - pa)*(Lt + reduce(maximum, [Lu + Tf, D + W - pa*reduce(minimum,
        [D, W]) - (1 - pa)*reduce(minimum, [D, Lt + reduce(maximum, [D + W, Lu + Tf]) -
        reduce(maximum, [D + Sy + W, Lt + a1 + reduce(maximum, [D + W, Lu + Tf])])])])) +
        reduce(maximum, [Lu + Tf, D + W - pa*reduce(minimum, [D, W]) - (1 - pa)*reduce(minimum, [D,
        Lt + reduce(maximum, [D + W, Lu + Tf]) - reduce(maximum, [D + Sy + W, Lt + a1 +
        reduce(maximum, [D + W, Lu + Tf])])])]))


def energy_dyn_c0_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (wd*(D*pa + (1 - pa)*(D + Sy)) + wp*(Pp*pa + Pp*(1 - pa)) + wt*(Tf*(1 - pa) +
        pa*reduce(minimum, [Tf, reduce(maximum, [0.0, D - Lu + W - reduce(minimum, [D, W])])])))


def energy_dyn_cB_110(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd + Ta*wt)


def latency_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (B*(2*Lt + P2 + Ta + reduce(maximum, [Lu + Tf, D + W - pa*reduce(minimum, [D, W]) - (1 -
        pa)*reduce(minimum, [D, Lt + P2 + reduce(maximum, [D + W, Lu + Tf]) - reduce(maximum, [D +
        Sy + W, Lt + a1 + reduce(maximum, [D + W, Lu + Tf])])])])) + init + (-B + N)*(pa*(D + W -
        pa*reduce(minimum, [D, W]) - (1 - pa)*reduce(minimum, [D, Lt + P2 + reduce(maximum, [D + W,
        Lu + Tf]) - reduce(maximum, [D + Sy + W, Lt + a1 + reduce(maximum, [D + W, Lu + Tf])])])) +
        (1 - pa)*(Lt + P2 + reduce(maximum, [Lu + Tf, D + W - pa*reduce(minimum, [D, W]) - (1 -
        pa)*reduce(minimum, [D, Lt + P2 + reduce(maximum, [D + W, Lu + Tf]) - reduce(maximum, [D +
        Sy + W, Lt + a1 + reduce(maximum, [D + W, Lu + Tf])])])]))))


def energy_dyn_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wp*(Pp*pa + (1 - pa)*(P2 + Pp)) + wd*(B*Sy + N*(D*pa + (1 - pa)*(D + Sy)) + Sy*(pa -
        1)) + wt*(B*Ta + N*(Tf*(1 - pa) + pa*reduce(minimum, [Tf, reduce(maximum, [0.0, D - Lu + W -
        reduce(minimum, [D, W])])]))))


def wasted_j_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A, wp: A,
                 wt: A, Pp: A, pa: A, pb: A, N: A, B: A) -> A:
    return (N*wd*(1 - pa)*reduce(minimum, [D, W]))


def latency_c0_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (init)


def latency_cN_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (pa*(D + W - pa*reduce(minimum, [D, W]) - (1 - pa)*reduce(minimum, [D, Lt + P2 +
        reduce(maximum, [D + W, Lu + Tf]) - reduce(maximum, [D + Sy + W, Lt + a1 + reduce(maximum,
        [D + W, Lu + Tf])])])) + (1 - pa)*(Lt + P2 + reduce(maximum, [Lu + Tf, D + W -
        pa*reduce(minimum, [D, W]) - (1 - pa)*reduce(minimum, [D, Lt + P2 + reduce(maximum, [D + W,
        Lu + Tf]) - reduce(maximum, [D + Sy + W, Lt + a1 + reduce(maximum, [D + W, Lu + Tf])])])])))


def latency_cB_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                   wp: A, wt: A, Pp: A, pa: A) -> A:
    return (2*Lt + P2 + Ta - pa*(D + W - pa*reduce(minimum, [D, W]) - (1 - pa)*reduce(minimum, [D,
        Lt + P2 + reduce(maximum, [D + W, Lu + Tf]) - reduce(maximum, [D + Sy + W, Lt + a1 +
        reduce(maximum, [D + W, Lu + Tf])])])) - (1 - pa)*(Lt + P2 + reduce(maximum, [Lu + Tf, D + W
        - pa*reduce(minimum, [D, W]) - (1 - pa)*reduce(minimum, [D, Lt + P2 + reduce(maximum, [D +
        W, Lu + Tf]) - reduce(maximum, [D + Sy + W, Lt + a1 + reduce(maximum, [D + W, Lu +
        Tf])])])])) + reduce(maximum, [Lu + Tf, D + W - pa*reduce(minimum, [D, W]) - (1 -
        pa)*reduce(minimum, [D, Lt + P2 + reduce(maximum, [D + W, Lu + Tf]) - reduce(maximum, [D +
        Sy + W, Lt + a1 + reduce(maximum, [D + W, Lu + Tf])])])]))


def energy_dyn_c0_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (Sy*wd*(pa - 1))


def energy_dyn_cN_111(D: A, W: A, Tf: A, Lu: A, Lt: A, Sy: A, a1: A, P2: A, Ta: A, init: A, wd: A,
                      wp: A, wt: A, Pp: A, pa: A) -> A:
    return (wd*(D*pa + (1 - pa)*(D + Sy)) + wp*(Pp*pa + (1 - pa)*(P2 + Pp)) + wt*(Tf*(1 - pa) +
        pa*reduce(minimum, [Tf, reduce(maximum, [0.0, D - Lu + W - reduce(minimum, [D, W])])])))


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
