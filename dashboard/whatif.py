"""What-if: one design, its metrics against the baselines, and where its time and energy go."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from dashboard import common
from dse import views
from dse.design_files import system_to_toml
from dse.engine.closed_form import BREAKDOWN_KEYS, closed_form_caveats
from dse.errors import DseError
from dse.schedules import DEVICE_ROLES, FLAGS, PRESETS
from dse.specs import SCHEMAS

cat = common.catalog()
ss = st.session_state
SYSTEM_KEYS = [k.toml for k in SCHEMAS["system"].keys]
# FPGA knobs whose widget shows 0 for "the default" (the key absent from the system)
DEFAULT_KNOBS = {k.toml for k in SCHEMAS["system"].keys if k.legacy_zero}


def wkey(toml_key: str) -> str:
    return f"wi_{toml_key}"


def load_widgets(state: views.DesignState, *, force: bool) -> None:
    """Put a state's values into the widgets' session keys (missing ones only, unless
    force)."""
    values: dict[str, Any] = {k: v for k, v in system_to_toml(state.spec(cat)).items()
                              if k in SYSTEM_KEYS}
    params = state.params()
    values |= {"system": state.system, "workload": state.workload,
               "schedule": params["schedule"]}
    values |= {f: getattr(state.schedule, f) for f in FLAGS}
    for k, v in values.items():
        if force or wkey(k) not in ss:
            ss[wkey(k)] = v


def on_system() -> None:
    preset = views.DesignState(ss.wi_system, ss.wi_workload, PRESETS[ss.wi_schedule])
    load_widgets(preset, force=True)


def on_schedule() -> None:
    for f in FLAGS:
        ss[wkey(f)] = getattr(PRESETS[ss.wi_schedule], f)


def on_device(role: str) -> None:
    opts = views.role_options(cat, role, ss[wkey(f"{role}_device")])
    if ss.get(wkey(f"{role}_precision")) not in opts.precisions:
        ss[wkey(f"{role}_precision")] = opts.default_precision
    serving = wkey(f"{role}_{opts.software_key}")
    if ss.get(serving) not in opts.servings:
        ss[serving] = opts.default_serving


def with_current(options: list[str], current: str) -> list[str]:
    """Options, keeping a current value that is not among them (e.g. a model file path)."""
    return options if current in options else [*options, current]


def controls(state: views.DesignState) -> views.DesignState:
    """The sidebar; returns the state the widgets describe."""
    sb = st.sidebar
    sb.selectbox("System preset", cat.names("system"), key="wi_system", on_change=on_system,
                 help="A named system from scenarios/systems; changing it resets the knobs below")
    sb.selectbox("Scenario (workload)", cat.names("workload"), key="wi_workload")
    sb.selectbox("Schedule", list(PRESETS), key="wi_schedule", on_change=on_schedule)
    sb.toggle("Backtracking", key="wi_backtracking")
    sb.toggle("Step-ahead speculation (T2)", key="wi_step_ahead")
    sb.toggle("Shadow sync (T1)", key="wi_shadow_sync")
    sb.subheader("Thresholds and backtracking")
    sb.slider("Accept threshold", 0.0, 1.0, step=0.01, key=wkey("accept_threshold"),
              help="PRM score at or above which a draft step is accepted")
    sb.slider("Backtrack threshold", 0.0, 1.0, step=0.01, key=wkey("backtrack_threshold"),
              help="a rewrite scored below it triggers a backtrack (when backtracking is on)")
    c1, c2 = sb.columns(2)
    c1.number_input("Max backtracks", min_value=0, step=1, key=wkey("max_backtracks"))
    c2.number_input("Backtrack window", min_value=1, step=1, key=wkey("backtrack_window"))
    with sb.expander("Hardware and models", expanded=False):
        for role in DEVICE_ROLES:
            st.markdown(f"**{role.upper() if role == 'prm' else role.capitalize()}**")
            dev = ss[wkey(f"{role}_device")]
            opts = views.role_options(cat, role, dev)
            st.selectbox("Device", opts.devices, key=wkey(f"{role}_device"),
                         on_change=on_device, args=(role,))
            st.selectbox("Model", with_current(opts.models, ss[wkey(f"{role}_model")]),
                         key=wkey(f"{role}_model"))
            c1, c2 = st.columns([2, 3])
            c1.selectbox("Precision", with_current(opts.precisions,
                                                   ss[wkey(f"{role}_precision")]),
                         key=wkey(f"{role}_precision"))
            serving = wkey(f"{role}_{opts.software_key}")
            if serving not in ss:  # a key the preset leaves at its default
                ss[serving] = opts.default_serving
            c2.selectbox(opts.serving_label, with_current(opts.servings, ss[serving]),
                         key=serving)
            if role == "target":
                st.number_input("Tensor parallel GPUs", min_value=1, step=1,
                                key=wkey("target_tp"))
            if role == "draft" and opts.build_knobs:  # the system's fpga_* knob keys
                r = views.build_knob_ranges(cat, dev)
                st.number_input("FPGA clock (MHz, 0 = board default)", min_value=0.0,
                                step=25.0, key=wkey("fpga_clock_MHz"),
                                help=f"{dev}: {r['clock_min_mhz']:g}-{r['clock_max_mhz']:g} "
                                f"MHz, default {r['clock_default_mhz']:g}")
                c1, c2 = st.columns(2)
                c1.number_input("Memory channels (0 = all)", min_value=0, step=1,
                                key=wkey("fpga_memory_channels"),
                                help=f"{dev} has {r['channels_max']:g}")
                c2.number_input("MAC lanes (0 = default)", min_value=0, step=256,
                                key=wkey("fpga_mac_lanes"))
        st.number_input("Max context (tokens)", min_value=1, step=256,
                        key=wkey("max_context_tokens"))
    sb.button("Reset to preset", key="wi_reset", on_click=on_system)
    # widgets not shown this run (e.g. FPGA knobs of a GPU draft) keep the state's values
    cur = system_to_toml(state.spec(cat))
    base = system_to_toml(cat.get("system", ss.wi_system))  # type: ignore[arg-type]
    values = {k: ss.get(wkey(k), cur.get(k)) for k in SYSTEM_KEYS}
    # optional keys (prm_tp) may be absent from both: no override
    overrides = {k: v for k, v in values.items() if base.get(k) != v and v is not None
                 and not (v == 0 and k in DEFAULT_KNOBS and k not in base)}
    sched = PRESETS[ss.wi_schedule].with_flags(**{f: bool(ss[wkey(f)]) for f in FLAGS})
    return views.DesignState(ss.wi_system, ss.wi_workload, sched, overrides)


# ---------------------------------------------------------------------------------- figures

ROLE_COLORS = {"init": "#9e9e9e", "draft": "#2a9d8f", "prm": "#e9c46a", "target": "#e76f51",
               "link": "#264653"}
KIND_COLORS = {"prefill": "#9e9e9e", "migrate": "#9e9e9e", "decode": "#2a9d8f",
               "tokens": "#264653", "verify": "#e9c46a", "speculate": "#8ecae6",
               "discarded": "#d62828", "stall": "#6c757d", "prefetch": "#f4a261",
               "refine": "#e76f51", "sync": "#a7c957", "verify-rewrite": "#bc6c25",
               "backtrack": "#7b2cbf"}


def fig_breakdown(reports: dict[str, Any]) -> go.Figure:
    fig = go.Figure()
    names = list(reports)
    for role in BREAKDOWN_KEYS:
        fig.add_bar(y=names, x=[reports[n].latency_breakdown_s[role] for n in names], name=role,
                    orientation="h", marker_color=ROLE_COLORS[role],
                    hovertemplate="%{y}: %{x:.3f} s<extra>" + role + "</extra>")
    fig.update_layout(barmode="stack", title="Latency per problem by role (critical path)",
                      yaxis={"autorange": "reversed"},
                      xaxis_title="seconds per problem", height=300,
                      margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


def fig_energy(split: dict[str, dict[str, float]]) -> go.Figure:
    devs = list(split)
    fig = go.Figure()
    fig.add_bar(x=devs, y=[split[d]["active_j"] for d in devs], name="above idle",
                marker_color="#e76f51")
    fig.add_bar(x=devs, y=[split[d]["idle_j"] for d in devs], name="idle draw",
                marker_color="#9e9e9e")
    fig.update_layout(barmode="stack", title="Energy per problem by device",
                      yaxis_title="joules per problem", height=300,
                      margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


def fig_timeline(tl: views.Timeline) -> go.Figure:
    fig = go.Figure()
    for kind, desc in views.TIMELINE_KINDS.items():
        iv = [i for i in tl.intervals if i["kind"] == kind]
        if not iv:
            continue
        fig.add_bar(base=[i["start_s"] for i in iv], x=[i["end_s"] - i["start_s"] for i in iv],
                    y=[i["device"] for i in iv], orientation="h", name=kind,
                    marker_color=KIND_COLORS.get(kind), customdata=[[desc]] * len(iv),
                    hovertemplate="%{customdata[0]}<br>%{base:.3f} s + %{x:.3f} s"
                    "<extra>" + kind + "</extra>")
    fig.update_layout(barmode="overlay", height=320, xaxis_title="seconds",
                      yaxis={"categoryorder": "array",
                             "categoryarray": list(reversed(views.TIMELINE_DEVICES))},
                      title=f"One simulated problem: {tl.attempts} attempts, "
                      f"{tl.latency_s:.2f} s", margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


def fig_roofline(rfs: list[views.RoleRoofline]) -> go.Figure:
    fig = make_subplots(rows=1, cols=len(rfs), subplot_titles=[
        f"{r.role}: {r.model} on {r.device}" for r in rfs])
    for i, r in enumerate(rfs, 1):
        pts = r.points
        lo = min(min(p.intensity for p in pts), r.peak_flops_per_s / r.peak_bytes_per_s) / 10
        hi = max(max(p.intensity for p in pts), r.peak_flops_per_s / r.peak_bytes_per_s) * 10
        for (f, b), dash, name in (((r.peak_flops_per_s, r.peak_bytes_per_s), "solid", "peak"),
                                   ((r.effective_flops_per_s, r.effective_bytes_per_s), "dash",
                                    "effective")):
            ridge = f / b
            x = sorted({lo, ridge, hi})
            fig.add_scatter(x=x, y=[min(f, b * v) for v in x], mode="lines", name=name,
                            line={"dash": dash, "color": "#264653"}, showlegend=i == 1,
                            legendgroup=name, row=1, col=i)
        fig.add_scatter(x=[p.intensity for p in pts], y=[p.achieved_flops_per_s for p in pts],
                        mode="markers+text", text=[p.op for p in pts], textposition="top center",
                        marker={"size": 10, "color": ROLE_COLORS[r.role]}, name=r.role,
                        customdata=[[p.time_s * 1e3] for p in pts],
                        hovertemplate="%{text}<br>%{x:.3g} FLOP/byte<br>%{y:.3g} FLOP/s"
                        "<br>%{customdata[0]:.3f} ms<extra></extra>", row=1, col=i)
        fig.update_xaxes(type="log", title_text="FLOP / byte", row=1, col=i)
        fig.update_yaxes(type="log", row=1, col=i)
    fig.update_yaxes(title_text="FLOP/s", row=1, col=1)
    fig.update_annotations(font_size=12)
    fig.update_layout(height=380, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      legend={"orientation": "h", "y": -0.25})
    return fig


def fig_intervals(rows: list[dict[str, Any]]) -> go.Figure:
    """This design and its GPU baselines, each headline metric with its 90% error bar."""
    panels = views.INTERVAL_PANELS
    fig = make_subplots(rows=1, cols=len(panels),
                        subplot_titles=[f"{label} ({unit})" for _, label, unit in panels])
    for col, (m, _, unit) in enumerate(panels, start=1):
        rr = [r for r in rows if r["metric"] == m]
        fig.add_scatter(
            x=[r["design"] for r in rr], y=[r["value"] for r in rr], mode="markers",
            marker={"size": 10, "color": "#264653"}, showlegend=False, row=1, col=col,
            error_y={"type": "data", "symmetric": False,
                     "array": [r["high"] - r["value"] for r in rr],
                     "arrayminus": [r["value"] - r["low"] for r in rr]},
            hovertemplate="%{x}: %{y:.4g} " + unit + "<extra></extra>")
    fig.update_layout(height=360, margin={"t": 60})
    return fig


def fig_tornado(rows: list[dict[str, Any]]) -> go.Figure:
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True,
                        subplot_titles=["latency per problem", "J / token"])
    labels = [r["label"] for r in rows][::-1]
    for col, (base, low, high) in enumerate((("latency_base_s", "latency_low_s",
                                              "latency_high_s"),
                                             ("j_per_token_base", "j_per_token_low",
                                              "j_per_token_high")), 1):
        rr = rows[::-1]
        for side, color, name in ((low, "#2a9d8f", "term -10%"), (high, "#e76f51",
                                                                   "term +10%")):
            fig.add_bar(y=labels, x=[(r[side] / r[base] - 1) * 100 for r in rr],
                        orientation="h", marker_color=color, name=name, showlegend=col == 1,
                        legendgroup=name, hovertemplate="%{y}: %{x:+.2f}%<extra></extra>",
                        row=1, col=col)
        fig.update_xaxes(title_text="change (%)", row=1, col=col)
    fig.update_layout(barmode="overlay", height=120 + 26 * len(rows),
                      margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


# ------------------------------------------------------------------------------------- page

state = common.current_state()
load_widgets(state, force=False)
state = controls(state)
common.set_state(state)
params = common.key(state)

st.title("What-if")
common.show_warning()
try:
    design = common.design_of(state)
    rep = common.report(params)
except DseError as e:
    ss["wi_report"] = None
    st.error(f"No numbers for this design: {e}")
    st.stop()

ss["wi_report"] = rep.to_dict()
st.caption(views.design_label(design.system, design.schedule) + f" | {state.workload}")
for note in closed_form_caveats(rep):
    st.warning(f"Closed form: {note} (the Timeline tab replays one problem).")
c = st.columns(5)
c[0].metric("Latency per problem", f"{rep.latency_s_per_problem:.3f} s")
c[1].metric("Goodput", f"{rep.goodput_tokens_per_s:.1f} tok/s")
c[2].metric("Energy per token", f"{rep.j_per_token:.3f} J/token")
c[3].metric("Accuracy", "n/a" if rep.accuracy is None else f"{rep.accuracy:.1f} %")
c[4].metric("Accept probability", f"{rep.p_accept:.3f}")
# the baselines come after the headline numbers, which the browser can already show; they are
# the paper's homogeneous GPU baselines of this design (its draft moved to the PRM's GPU)
base_states = {b: state.gpu_baseline(cat, b) for b in views.BASELINES}
base, base_errors = {}, {}
for b, bs in base_states.items():
    try:
        base[b] = common.report(common.key(bs))
    except DseError as e:  # e.g. the draft model does not fit the PRM's GPU
        base_errors[b] = str(e)
gains = views.speedups(rep, base)
for b, err in base_errors.items():
    st.caption(f"No {b} GPU baseline: {err}")
c = st.columns(max(len(gains), 1))
for col, (name, g) in zip(c, gains.items(), strict=False):
    bd = base_states[name].spec(cat).draft_device
    col.metric(f"Speed-up vs {name}", f"{g['speedup']:.2f}x",
               help=f"{name} on GPUs (draft on {bd}, as the paper's baselines): "
               f"{base[name].latency_s_per_problem:.3f} s per problem, "
               f"{base[name].j_per_token:.3f} J/token; energy gain {g['energy_gain']:.2f}x")

# only the open tab is drawn (the others cost nothing until chosen)
t_lat, t_unc, t_tl, t_roof, t_sens, t_cli = st.tabs(
    ["Latency and energy", "Uncertainty", "Timeline", "Roofline", "Sensitivity",
     "Command line"], key="wi_tab", on_change="rerun")
if t_lat.open:
    with t_lat:
        c1, c2 = st.columns(2)
        c1.plotly_chart(fig_breakdown({f"{rep.schedule} (this)": rep,
                                       **{f"{b} (GPU)": r for b, r in base.items()}}),
                        key="wi_fig_lat")
        c2.plotly_chart(fig_energy(views.energy_split(design, rep)), key="wi_fig_energy")
        st.caption(f"Communication share {rep.communication_share:.4%}; speculation stall "
                   f"{rep.speculation_stall_ratio:.2%}; wasted tokens "
                   f"{rep.wasted_tokens_per_problem:.1f} per problem "
                   f"({rep.wasted_energy_share:.2%} of energy); backtracks "
                   f"{rep.backtracks_per_problem:.2f} per problem.")
if t_unc.open:
    with t_unc:
        full = common.report_with_intervals(params)
        with_iv = {f"{rep.schedule} (this)": full}
        for b, bs in base_states.items():
            if b in base:
                with_iv[f"{b} (GPU)"] = common.report_with_intervals(common.key(bs))
        st.plotly_chart(fig_intervals(views.interval_rows(with_iv)), key="wi_fig_intervals")
        iv = full.intervals
        st.caption("90% intervals (dse.uncertainty): latency "
                   f"{iv['latency_s_per_problem'][0]:.3f}-{iv['latency_s_per_problem'][1]:.3f}"
                   f" s, energy {iv['j_per_token'][0]:.3f}-{iv['j_per_token'][1]:.3f} J/token"
                   + (f", accuracy {iv['accuracy'][0]:.1f}-{iv['accuracy'][1]:.1f} %"
                      if "accuracy" in iv else "")
                   + ". Widths come from the cost models' cross-validated residuals and the "
                   "declared ranges; the baselines share this design's GPUs, so their errors "
                   "move together.")
        st.dataframe(views.provenance_rows(full), key="wi_provenance", hide_index=True)
if t_tl.open:
    with t_tl:
        ss.setdefault("wi_timeline_seed", 0)
        st.number_input("Problem (seed)", min_value=0, step=1, key="wi_timeline_seed")
        tl = common.timeline(params, int(ss.wi_timeline_seed))
        st.plotly_chart(fig_timeline(tl), key="wi_fig_timeline")
        st.caption("Simulator replay of one synthetic problem (decisions: "
                   + ", ".join(tl.decisions) + "). Red: step-ahead draft work a reject "
                   "discarded; grey on the draft row: waiting for the verdict.")
if t_roof.open:
    with t_roof:
        st.plotly_chart(fig_roofline(common.rooflines(params)), key="wi_fig_roofline")
        st.caption("Operating points at the problem's mean context. Solid: datasheet "
                   "roofline; dashed: what the serving profile or FPGA build reaches.")
if t_sens.open:
    with t_sens:
        st.plotly_chart(fig_tornado(common.tornado(params)), key="wi_fig_tornado")
        st.caption("Mean-value model (dse.symbolic): each term scaled by -10% / +10%, the "
                   "others held.")
if t_cli.open:
    with t_cli:
        args = " ".join(f"--set {a}" for a in state.set_args())
        st.code(f"dse evaluate --system {state.system} --scenario {state.workload} "
                f"--schedule {state.params()['schedule']} {args}".rstrip(), language="bash")
        st.caption("This page's URL carries the design: copy it to share this view.")
