"""The simplest alternative beside `dse serve`'s answer (STYLE 18): a speculative or width
design beside its target placement alone, token-level speculation beside the same target
without it, at the same load and replicas; the margins with the interval of the difference."""

from __future__ import annotations

import math
from typing import Any

# the margins against the simplest alternative at the load: (key, label, unit, higher is
# better); a throughput only where the system sets it (`_throughput_decides`)
VERSUS = (("output_throughput", "throughput", "tokens/s", True),
          ("mean_e2el_ms", "e2e latency", "ms", False), ("j_per_token", "energy", "J/token", False),
          ("cost_usd_per_mtok", "cost", "$/Mtoken", False),
          ("accuracy", "accuracy", "pts", True))


def _throughput_decides(r: dict[str, Any], alone: dict[str, Any]) -> bool:
    """Below both capacities at a request rate the throughput is the rate's (the two differ
    only by their tokens a problem): a margin there says nothing of the systems."""
    ld = r["load"]
    return (ld["kind"] != "rate" or math.isinf(ld["value"]) or bool(r.get("saturated"))
            or bool(alone.get("saturated")))


def versus(r: dict[str, Any], serve_alone: Any, *,
           accuracy: dict[str, Any] | None = None) -> dict[str, Any]:
    """`target_alone` (the alternative's figures at the same load and replicas: the target
    without token-level speculation, or a design's target placement alone) and
    `vs_target_alone` (this one minus it on each VERSUS figure with the interval of the
    difference, both on the same target board: dse.uncertainty.joint.difference_of_ends;
    accuracy: the single-stream joint margin, `accuracy_margin`). A target that cannot
    serve the load gives its reason instead."""
    from dse.uncertainty.joint import difference_of_ends

    try:
        alone = serve_alone()
    except ValueError as e:
        return {"target_alone": {"infeasible": str(e)}, "vs_target_alone": None}
    alone.pop("load", None)
    keep = [k for k, *_ in VERSUS if k != "accuracy"
            and (k != "output_throughput" or _throughput_decides(r, alone))]
    out: dict[str, Any] = {}
    for k in keep:
        va, vb = r.get(k), alone.get(k)
        if va is None or vb is None:
            continue
        ia, ib = r["intervals"].get(k, [va, va]), alone["intervals"].get(k, [vb, vb])
        m, iv = difference_of_ends(va, ia, vb, ib, shared=True)
        out[k] = {"margin": m, "interval": iv, "decided": not iv[0] <= 0 <= iv[1]}
    if accuracy is not None:
        out["accuracy"] = accuracy
    summary = {k: alone.get(k) for k in ("output_throughput", "mean_e2el_ms", "j_per_token",
                                         "cost_usd_per_mtok", "accuracy", "saturated",
                                         "capacity_request_rate")}
    summary["intervals"] = {k: v for k, v in alone["intervals"].items() if k in summary}
    return {"target_alone": summary, "vs_target_alone": out}


def accuracy_margin(d: Any, alone: Any, w: Any) -> dict[str, Any] | None:
    """The design's accuracy minus its target alone's (the load does not change either), with
    the joint 90% interval of the single-stream reports (dse.uncertainty.joint); None where
    either has no accuracy on the workload."""
    from dse.io.resolve import report
    from dse.uncertainty.joint import difference_interval

    rd, ra = report(d, w), report(alone, w)
    if rd.accuracy is None or ra.accuracy is None:
        return None
    lo, hi = difference_interval((d, rd), (alone, ra), w, ["accuracy"])["accuracy"]
    m = float(rd.accuracy) - float(ra.accuracy)
    return {"margin": m, "interval": [lo, hi], "decided": not lo <= 0 <= hi}


def versus_lines(r: dict[str, Any]) -> list[str]:
    """The margin against the target alone at this load (`versus`), or why it has none."""
    if "target_alone" not in r:
        return []
    design = "system" in r and r.get("speculative") is None  # else token-level speculation
    what = "the target alone" if design else "the target without speculation"
    this = r.get("schedule") if design else "speculation"
    if r["vs_target_alone"] is None:
        return ["", f"{what} at this load: {r['target_alone']['infeasible']}"]
    vs = r["vs_target_alone"]
    parts: list[str] = []
    better: list[str] = []
    worse: list[str] = []
    for k, label, unit, up in VERSUS:
        if k not in vs:
            continue
        v = vs[k]
        lo, hi = v["interval"]
        parts.append(f"{label} {v['margin']:+.4g} {unit} [{lo:+.4g} to {hi:+.4g}]"
                     + ("" if v["decided"] else " (undecided: 0 inside)"))
        if v["decided"]:
            (better if (v["margin"] > 0) == up else worse).append(label)
    verdict = "; ".join(x for x in (
        f"{this} is better on {', '.join(better)}" if better else "",
        f"{what} is better on {', '.join(worse)}" if worse else "") if x) or \
        "no figure decided"
    sat = f"; {what} is past its capacity at this load" if r["target_alone"].get(
        "saturated") else ""
    return ["", f"{this} - {what} at this load (joint 90% interval of the difference): "
            + ", ".join(parts) + f". So: {verdict}{sat}"]
