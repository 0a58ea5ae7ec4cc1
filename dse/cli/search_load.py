"""`dse sweep` and `dse optimize` at a load (`--rate R`, `--slo ttft:MS,tpot:MS`, or the
workload's [load] table): the flags, and the text and JSON of the search at the load
(dse.search.at_load)."""

from __future__ import annotations

import argparse
from typing import Any

from dse.cli.common import margin_text, rate_per_s, table, whole_number, with_interval
from dse.core.limits import MAX_NUM_SEQS
from dse.errors import UsageError

LOAD_NOTE = ("each design served at the load by the serving closed form (as dse serve --system "
             "... --rate R) on the fewest replicas that hold it at <= {u:.0%} of their capacity "
             "(doubled while an SLO is missed); token-speculative: each target placement with "
             "the default proposers (ngram, eagle, the space's draft models smaller than the "
             "target; k 4); accuracy as single-stream; [low-high]: 90% intervals "
             "(docs/model.md, Serving at load)")


def load_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rate", type=rate_per_s, metavar="R",
                   help="serve R requests (the workload's problems) per second, Poisson: "
                   "cost, j_per_token, goodput and latency measured at that load, each design "
                   "on the fewest replicas that hold it (default: the workload's [load] table, "
                   "else one problem at a time)")
    p.add_argument("--slo", nargs="+", metavar="KEY:MS",
                   help="SLOs at --rate on the mean latencies, ttft:MS,tpot:MS (or vLLM's "
                   "ttft:MS tpot:MS e2el:MS): a design that misses one is infeasible")
    p.add_argument("--max-num-seqs", type=whole_number(1, MAX_NUM_SEQS), nargs="+",
                   metavar="N", help="at --rate: the scheduler's caps on running sequences "
                   "to try for every design (vLLM's max_num_seqs; a lower cap shortens each "
                   "step, a search dimension beside the replicas; default: each GPU's vLLM "
                   "default only)")


def load_of(a: argparse.Namespace, cat: Any, space: Any, objectives: list[str]) -> Any:
    """The search's load (dse.search.at_load.LoadSpec) or None; a bad combination is one
    UsageError line."""
    from dse.search.at_load import LOAD_METRICS
    from dse.search.loads import load_spec

    w = cat.workload(space.workloads[0][0]) if len(space.workloads) == 1 else None
    ld = load_spec(a.rate, a.slo, w, a.max_num_seqs or ())
    if ld is None:
        return None
    if objectives[0] not in LOAD_METRICS:
        raise UsageError(f"--rate: --objective {objectives[0]} does not depend on the load (a "
                         "design's accuracy is the same at any rate); rank by "
                         f"{', '.join(LOAD_METRICS)}")
    if len(objectives) > 1:
        raise UsageError("--rate: one --objective at a load (the search ranks each family's "
                         "designs at the load by it)")
    if len(space.workloads) != 1:
        raise UsageError(f"--rate: space {space.name} weighs a mix of workloads; at a load "
                         "a search serves one workload's problems")
    return ld


COLS = (("cost_usd_per_mtok", "$/Mtoken"), ("j_per_token", "J/token"),
        ("goodput_tokens_per_s", "goodput tok/s/replica"), ("latency_s_per_problem",
                                                            "e2el s"))


def _served_row(s: Any, metric: str) -> list[Any]:
    m, iv = s.candidate.metrics, s.candidate.intervals
    v = m.get(metric)
    return [with_interval(v, iv.get(metric)) if v is not None else "-", s.replicas,
            f"{m['mean_ttft_ms']:.4g}", f"{m['mean_tpot_ms']:.3g}",
            "-" if m.get("accuracy") is None else f"{m['accuracy']:.4g}"]


def load_text(res: Any, width: int | None, head: str) -> str:
    """The search at the load: its line, the ranked designs, each family's best with its
    margin, the infeasible designs counted by reason."""
    from dse.search.at_load import LOAD_METRICS, SHOWN, label
    from dse.search.families import idle_notes

    ld = res.load
    metric, _ = LOAD_METRICS[res.objective]
    unit = dict(COLS)[metric]
    out = [head, f"at load: {ld.rate:g} requests/s (Poisson, {ld.source}) in "
           f"{res.seconds:.2f} s; SLOs: {ld.slo_text}; {res.n_pool} designs in the pool, "
           f"{res.n_served} served (the rest screened out by a bound on {res.objective})",
           LOAD_NOTE.format(u=ld.utilisation)]
    for k, v in sorted(res.infeasible.items()):
        out.append(f"infeasible at load: {k}: {v} design{'s' if v != 1 else ''}, e.g. "
                   f"{res.examples[k]}")
    rows = [[i + 1, s.family, *_served_row(s, metric), label(s)]
            for i, s in enumerate(res.ranked[:SHOWN])]
    out.append(table(["#", "family", unit, "replicas", "TTFT ms", "TPOT ms", "accuracy %",
                      "design"], rows, width=width))
    frows = []
    for f in res.by_family:
        s = res.served.get(f.family)
        if s is None:
            frows.append([f.family, "-", "-", "-", "-", "-", f.note])
            continue
        margin = margin_text(f, metric)
        frows.append([f.family, *_served_row(s, metric), margin])
    out.append(f"\nbest of each family at {ld.rate:g} requests/s (margin: family - #1 on "
               f"{unit}, [90% interval of the difference])")
    out.append(table(["family", unit, "replicas", "TTFT ms", "TPOT ms", "accuracy %",
                      "margin vs #1"], frows, width=width))
    out += idle_notes(res.by_family, res.objective)
    out.append("")
    for f in res.by_family:
        s = res.served.get(f.family)
        if s is not None:
            out.append(f"{f.family}: {label(s)}")
    return "\n".join(out)


def load_payload(res: Any) -> dict[str, Any]:
    """The search at the load for --json: `load`, `best` (ranked, at the load), `by_family`
    and `at_load` (pool, served, infeasible counts)."""
    from dse.search.at_load import SHOWN

    def one(s: Any) -> dict[str, Any]:
        d = s.candidate.to_dict()
        return d | {"family": s.family, "replicas": s.replicas, "proposer": s.proposer}

    return {"load": res.load.to_dict(), "best": [one(s) for s in res.ranked[:SHOWN]],
            "by_family": res.family_dicts(),
            "at_load": {"objective": res.objective, "n_pool": res.n_pool,
                        "n_served": res.n_served, "seconds": res.seconds,
                        "infeasible": res.infeasible, "infeasible_examples": res.examples,
                        "target_utilisation": res.load.utilisation}}


def no_design(res: Any) -> str:
    why = "; ".join(f"{k}: {v}" for k, v in sorted(res.infeasible.items())) or "none served"
    return (f"no design holds {res.load.rate:g} requests/s under the SLOs ({res.load.slo_text})"
            f": {why}; relax the SLOs or lower --rate")


