"""Load: the current design and its alternatives (its target alone; for an FPGA draft, the
strong GPU baseline) served at a range of request rates (`dse serve --system ... --rate R`):
latencies, goodput and cost per million tokens against the rate, the knee, with the 90%
intervals as bands and the SLOs drawn, and at the chosen rate the margin against the target
alone in plain words (dse.views.load)."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from dashboard import common
from dse import views
from dse.errors import DseError
from dse.views import load as vl

ss = st.session_state
COLORS = ("#e76f51", "#264653", "#2a9d8f", "#e9c46a")
DASHES = {"mean": "solid", "median": "solid", "p90": "dash", "p99": "dot"}


def controls(ls: vl.LoadState) -> vl.LoadState:
    """The sidebar's load controls (each `ld_<field>`, loaded from the session's load when
    the page opens); 0 turns a rate or an SLO off."""
    init = {"ld_rate": ls.rate or 0.0, "ld_rate_max": ls.rate_max,
            "ld_ttft": ls.ttft_ms or 0.0, "ld_tpot": ls.tpot_ms or 0.0,
            "ld_lengths": ls.lengths, "ld_evaluator": ls.evaluator}
    for k, v in init.items():
        if k not in ss:
            ss[k] = v
    sb = st.sidebar
    sb.subheader("Load")
    sb.number_input("Rate to compare at (requests/s, 0 = none)", min_value=0.0,
                    max_value=vl.MAX_RATE, step=0.05, format="%g", key="ld_rate",
                    help="Poisson arrivals (dse serve --rate). What-if shows the design's "
                    "figures at this rate too.")
    sb.number_input("Rate axis up to (requests/s)", min_value=0.01, max_value=vl.MAX_RATE,
                    step=0.25, format="%g", key="ld_rate_max")
    sb.number_input("TTFT SLO (ms, 0 = none)", min_value=0.0, step=100.0, format="%g",
                    key="ld_ttft", help="time to first token (vLLM's TTFT): a request's wait "
                    "and its prompt's prefill")
    sb.number_input("TPOT SLO (ms, 0 = none)", min_value=0.0, step=10.0, format="%g",
                    key="ld_tpot", help="time per output token after the first (vLLM's TPOT)")
    sb.radio("Request lengths", list(vl.LENGTH_LABELS), key="ld_lengths",
             format_func=vl.LENGTH_LABELS.get)
    sb.radio("Evaluator", list(vl.EVALUATOR_LABELS), key="ld_evaluator",
             format_func=vl.EVALUATOR_LABELS.get)
    return vl.LoadState(rate=float(ss.ld_rate) or None, rate_max=float(ss.ld_rate_max),
                        ttft_ms=float(ss.ld_ttft) or None, tpot_ms=float(ss.ld_tpot) or None,
                        lengths=ss.ld_lengths, evaluator=ss.ld_evaluator)


def band(fig: go.Figure, rows: list[dict[str, Any]], color: str, name: str, row: int,
         col: int) -> None:
    """The 90% interval of a curve as a filled band (where every point carries one)."""
    if not rows or any(r["low"] is None for r in rows):
        return
    xs = [r["rate"] for r in rows]
    fig.add_scatter(x=xs + xs[::-1], y=[r["high"] for r in rows] + [r["low"] for r in rows][::-1],
                    fill="toself", fillcolor=color, opacity=0.2, line={"width": 0}, mode="lines",
                    hoverinfo="skip", showlegend=False, legendgroup=name, row=row, col=col)


PANELS = (("ttft", "TTFT (ms)", 1, 1), ("tpot", "TPOT (ms)", 1, 2),
          ("request_goodput", "goodput (requests/s)", 2, 1),
          ("cost_usd_per_mtok", "cost ($/Mtok)", 2, 2))


def fig_load(curves: list[vl.Curve], ls: vl.LoadState) -> go.Figure:
    fig = make_subplots(rows=2, cols=2, horizontal_spacing=0.08, vertical_spacing=0.12,
                        subplot_titles=[t for _, t, _, _ in PANELS])
    for i, c in enumerate(curves):
        color = COLORS[i % len(COLORS)]
        for key, title, r, col in PANELS:
            metrics = vl.latency_metrics(ls.evaluator, key) if key in ("ttft", "tpot") \
                else [key]
            for j, m in enumerate(metrics):
                rows = vl.curve_rows([c], m)
                if not rows:
                    continue
                tag = m.split("_")[0]
                if j == 0:
                    band(fig, rows, color, c.name, r, col)
                label = c.name + ("" if len(metrics) == 1 else f" {tag}")
                fig.add_scatter(x=[x["rate"] for x in rows], y=[x["value"] for x in rows],
                                mode="lines+markers", name=label, legendgroup=c.name,
                                showlegend=key == "ttft",
                                line={"color": color, "dash": DASHES.get(tag, "solid")},
                                marker={"size": 4},
                                hovertemplate="%{x:.3g} req/s: %{y:.4g}<extra>" + label
                                + f" ({title})</extra>", row=r, col=col)
    for key, bound in (("ttft", ls.ttft_ms), ("tpot", ls.tpot_ms)):
        if bound is not None:
            _, _, r, col = next(p for p in PANELS if p[0] == key)
            fig.add_hline(y=bound, line={"color": "#d62828", "dash": "dash", "width": 1},
                          annotation_text=f"SLO {bound:g} ms", row=r, col=col)
    if ls.rate is not None:
        fig.add_vline(x=ls.rate, line={"color": "#6c757d", "dash": "dot", "width": 1})
    fig.update_xaxes(range=[0, ls.rate_max * 1.02])
    for col in (1, 2):
        fig.update_xaxes(title_text="request rate (requests/s)", row=2, col=col)
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(height=620, margin={"l": 10, "r": 10, "t": 60, "b": 10},
                      legend={"orientation": "h", "y": -0.12})
    return fig


def at_rate_rows(curves: list[vl.Curve], ls: vl.LoadState) -> list[dict[str, str]]:
    rows = []
    for c in curves:
        p = c.points.get(ls.rate) if ls.rate is not None else None
        row = {"design": c.name, "family": c.family,
               "capacity (requests/s)": f"{c.capacity:.3g}"}
        if p is None:
            row["at the rate"] = "past its capacity" if ls.rate is not None else "–"
        else:
            for r in vl.at_load_rows(p):
                row[r["figure"]] = r["value"] + (f" [{r['90% interval']}]"
                                                 if r["90% interval"] != "–" else "")
        rows.append(row)
    return rows


cat = common.catalog()
state = common.current_state()
st.title("Load")
common.show_warning()
ls = controls(common.load_state())
common.set_load_state(ls)
try:
    design = common.design_of(state)
    common.report(common.key(state))
except DseError as e:
    st.error(f"No numbers for this design: {e}")
    st.stop()
alts = vl.alternatives(cat, state, design)
if ls.lengths == "sharegpt":
    alts = {n: s for n, s in alts.items()  # n-gram's acceptance is the workload's
            if common.design_of(s).workflow == "target-only" and n != vl.NGRAM}
load_key = tuple(sorted(ls.curve_params().items()))
# the header names the state whose numbers follow (the URL carries the same one)
st.caption(views.design_label(design.system, design.schedule) + f" | {state.workload} | "
           + (f"rate {ls.rate:g}/s" if ls.rate is not None else "no rate chosen")
           + f", axis to {ls.rate_max:g}/s, SLOs TTFT "
           + (f"{ls.ttft_ms:g} ms" if ls.ttft_ms else "none") + ", TPOT "
           + (f"{ls.tpot_ms:g} ms" if ls.tpot_ms else "none")
           + f" | lengths: {ls.lengths} | {ls.evaluator}")
curves: list[vl.Curve] = []
with st.spinner("Serving each design at each rate..."):
    for name, s in alts.items():
        try:
            curves.append(common.load_curve_at(common.key(s), load_key, name, ls.rate))
        except (DseError, ValueError) as e:
            st.caption(f"No {name} at load: {e}")
by_name = {c.name: c for c in curves}
this, alone = by_name.get("this design"), by_name.get("target alone")
if ls.lengths == "sharegpt":
    st.info("ShareGPT lengths are a chat service's requests: a speculative or width design "
            "serves its workload's reasoning problems, so only the target alone is served on "
            "them (`dse serve --model ... --dataset sharegpt`).")
elif this is not None:
    for line in vl.verdict(this, alone, ls, shared=True):
        st.markdown(line)
if curves:
    common.chart(fig_load(curves, ls), key="ld_fig")
    st.caption(("Lines: the closed form's means; bands: their 90% intervals (the single-"
                "stream cost models' factors, widened by the batched terms' own error, as "
                "`dse serve` gives them)." if ls.evaluator == "closed-form" else
                "Solid: p50, dashed: p90, dotted: p99 of the simulated requests (a run's "
                "percentiles: no band); the goodput and cost bands are their 90% "
                "intervals.")
               + " Each curve stops at the design's capacity on one replica (past it the "
               "queue grows with the run). Goodput: the requests per second that meet the "
               "SLOs" + (" (the closed form: all when the means do, else none)."
                         if ls.evaluator == "closed-form" else ".")
               + " Cost: the devices' list prices over "
               "their lifetime and the energy, per million output tokens.")
    st.table(at_rate_rows(curves, ls), hide_index=True)
    rates = " ".join(f"--rate {r:g}" for r in ([ls.rate] if ls.rate else [])) or "--rate R"
    slo = " ".join(f"{k}:{v:g}" for k, v in (("ttft", ls.ttft_ms), ("tpot", ls.tpot_ms)) if v)
    args = " ".join(f"--set {a}" for a in state.set_args())
    t = design.target
    what = (f"--model {t.model.name} --device {t.device.name} --tp {t.tp} --precision "
            f"{t.precision.name} --serving {t.serving} --dataset sharegpt"
            if ls.lengths == "sharegpt" else
            f"--system {state.system} --scenario {state.workload} --schedule "
            f"{state.params()['schedule']} {args}".rstrip())
    st.code(f"dse serve {what} {rates}" + (f" --goodput {slo}" if slo else "")
            + (" --evaluator simulator" if ls.evaluator == "simulator" else ""),
            language="bash")
