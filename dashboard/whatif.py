"""What-if: one design, its metrics against the baselines, and where its time and energy go."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from dashboard import charts, common
from dse import views
from dse.design_files import system_to_toml
from dse.engine.closed_form import closed_form_caveats
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


def controls() -> None:
    """The sidebar's widgets (their values are in the session state already, so the page
    draws them after its headline numbers)."""
    sb = st.sidebar
    sb.selectbox("System preset", cat.names("system"), key="wi_system", on_change=on_system,
                 help="A named system from scenarios/systems; changing it resets the knobs below")
    sb.selectbox("Scenario (workload)", cat.names("workload"), key="wi_workload")
    sb.selectbox("Schedule", list(PRESETS), key="wi_schedule", on_change=on_schedule,
                 help="; ".join(f"{p}: {common.tip(p)}" for p in PRESETS))
    sb.toggle("Backtracking", key="wi_backtracking", help=common.tip("backtracking"))
    sb.toggle("Step-ahead speculation (T2)", key="wi_step_ahead", help=common.tip("step_ahead"))
    sb.toggle("Shadow sync (T1)", key="wi_shadow_sync", help=common.tip("shadow_sync"))
    sb.subheader("Thresholds and backtracking")
    sb.slider("Accept threshold", 0.0, 1.0, step=0.01, key=wkey("accept_threshold"),
              help=common.tip("accept_threshold"))
    sb.slider("Backtrack threshold", 0.0, 1.0, step=0.01, key=wkey("backtrack_threshold"),
              help=common.tip("backtrack threshold"))
    sb.number_input("Max backtracks", min_value=0, step=1, key=wkey("max_backtracks"),
                    help=common.tip("max backtracks"))
    sb.number_input("Backtrack window (steps)", min_value=1, step=1,
                    key=wkey("backtrack_window"), help=common.tip("backtrack window"))
    with sb.expander("Hardware and models", expanded=False):
        for role in DEVICE_ROLES:
            st.markdown(f"**{role.upper() if role == 'prm' else role.capitalize()}**",
                        help=common.tip(role))
            dev = ss[wkey(f"{role}_device")]
            opts = views.role_options(cat, role, dev)
            st.selectbox("Device", opts.devices, key=wkey(f"{role}_device"),
                         on_change=on_device, args=(role,))
            st.selectbox("Model", with_current(opts.models, ss[wkey(f"{role}_model")]),
                         key=wkey(f"{role}_model"))
            # full width: the sidebar is too narrow for two selectboxes side by side
            st.selectbox("Precision", with_current(opts.precisions,
                                                   ss[wkey(f"{role}_precision")]),
                         key=wkey(f"{role}_precision"))
            serving = wkey(f"{role}_{opts.software_key}")
            if serving not in ss:  # a key the preset leaves at its default
                ss[serving] = opts.default_serving
            st.selectbox(opts.serving_label, with_current(opts.servings, ss[serving]),
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
                st.number_input("Memory channels (0 = all)", min_value=0, step=1,
                                key=wkey("fpga_memory_channels"),
                                help=f"{dev} has {r['channels_max']:g}")
                st.number_input("MAC lanes (0 = default)", min_value=0, step=256,
                                key=wkey("fpga_mac_lanes"))
        st.number_input("Max context (tokens)", min_value=1, step=256,
                        key=wkey("max_context_tokens"))
    sb.button("Reset to preset", key="wi_reset", on_click=on_system)


def widget_state(state: views.DesignState) -> views.DesignState:
    """The design the widgets' session values describe (`state`: the one they were loaded
    from)."""
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

KIND_COLORS = {"prefill": "#9e9e9e", "migrate": "#9e9e9e", "decode": "#2a9d8f",
               "tokens": "#264653", "verify": "#e9c46a", "speculate": "#8ecae6",
               "discarded": "#d62828", "stall": "#6c757d", "prefetch": "#f4a261",
               "refine": "#e76f51", "sync": "#a7c957", "verify-rewrite": "#bc6c25",
               "backtrack": "#7b2cbf"}


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
    fig.update_layout(barmode="overlay", height=340, xaxis_title="time into the problem (s)",
                      yaxis={"categoryorder": "array", "title": "device",
                             "categoryarray": list(reversed(views.TIMELINE_DEVICES))},
                      title=f"One simulated problem: {tl.attempts} attempts, "
                      f"{tl.latency_s:.2f} s", margin=charts.MARGIN)
    return fig


def fig_roofline(rfs: list[views.RoleRoofline]) -> go.Figure:
    """Each role's roofline (datasheet and effective) with its operating points, in TFLOP/s
    against FLOP/byte on log axes."""
    tera = 1e12
    fig = make_subplots(rows=1, cols=len(rfs), horizontal_spacing=0.07, subplot_titles=[
        f"{views.ROLE_LABELS.get(r.role, r.role)}: {r.model}<br>on {r.device}" for r in rfs])
    for i, r in enumerate(rfs, 1):
        pts = r.points
        lo = min(min(p.intensity for p in pts), r.peak_flops_per_s / r.peak_bytes_per_s) / 10
        hi = max(max(p.intensity for p in pts), r.peak_flops_per_s / r.peak_bytes_per_s) * 10
        for (f, b), dash, name in (((r.peak_flops_per_s, r.peak_bytes_per_s), "solid",
                                    "datasheet peak"),
                                   ((r.effective_flops_per_s, r.effective_bytes_per_s), "dash",
                                    "effective (serving profile / FPGA build)")):
            ridge = f / b
            x = sorted({lo, ridge, hi})
            fig.add_scatter(x=x, y=[min(f, b * v) / tera for v in x], mode="lines", name=name,
                            line={"dash": dash, "color": "#264653"}, showlegend=i == 1,
                            legendgroup=name, hovertemplate="%{x:.3g} FLOP/byte: %{y:.3g} "
                            "TFLOP/s<extra>" + name + "</extra>", row=1, col=i)
        ivs = [p.achieved_interval for p in pts]
        bars = None if any(v is None for v in ivs) else {
            "type": "data", "symmetric": False, "color": charts.ROLE_COLORS[r.role],
            "array": [v[1] / tera - p.achieved_flops_per_s / tera
                      for p, v in zip(pts, ivs, strict=True) if v is not None],
            "arrayminus": [p.achieved_flops_per_s / tera - v[0] / tera
                           for p, v in zip(pts, ivs, strict=True) if v is not None]}
        fig.add_scatter(x=[p.intensity for p in pts],
                        y=[p.achieved_flops_per_s / tera for p in pts], error_y=bars,
                        mode="markers+text", text=[p.op for p in pts], textposition="top center",
                        marker={"size": 10, "color": charts.ROLE_COLORS[r.role]},
                        name=views.ROLE_LABELS.get(r.role, r.role),
                        customdata=[[p.time_s * 1e3] for p in pts],
                        hovertemplate="%{text}<br>%{x:.3g} FLOP/byte<br>%{y:.3g} TFLOP/s"
                        "<br>%{customdata[0]:.3f} ms<extra></extra>", row=1, col=i)
        fig.update_xaxes(type="log", title_text="arithmetic intensity (FLOP/byte)",
                         exponentformat="power", row=1, col=i)
        fig.update_yaxes(type="log", title_text="achieved (TFLOP/s)", exponentformat="power",
                         row=1, col=i)
    fig.update_annotations(font_size=12)
    fig.update_layout(height=420, margin={"l": 10, "r": 10, "t": 80, "b": 10},
                      legend={"orientation": "h", "y": -0.3})
    return fig


def fig_tornado(rows: list[dict[str, Any]]) -> go.Figure:
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True,
                        subplot_titles=["latency per problem", "energy per token (J/token)"])
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
    fig.update_layout(barmode="overlay", height=140 + 26 * len(rows), margin=charts.MARGIN,
                      legend={"orientation": "h", "y": -0.15})
    return fig


# ------------------------------------------------------------------------------------- page

state = common.current_state()
load_widgets(state, force=False)
state = widget_state(state)
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
    controls()
    st.stop()

ss["wi_report"] = rep.to_dict()
st.caption(views.design_label(design.system, design.schedule) + f" | {state.workload}")
for note in closed_form_caveats(rep):
    st.warning(f"Closed form: {note} (the Timeline tab replays one problem).")
HEADLINE_METRICS = (("latency_s_per_problem", "Latency per problem", "s", ".3f"),
            ("goodput_tokens_per_s", "Goodput", "tok/s", ".1f"),
            ("j_per_token", "Energy per token", "J/token", ".3f"),
            ("accuracy", "Accuracy", "%", ".1f"))
c = st.columns(5)
interval_slots = {}
for col, (m, label, unit, fmt) in zip(c, HEADLINE_METRICS, strict=False):
    v = getattr(rep, m)
    col.metric(label, "n/a" if v is None else f"{v:{fmt}} {unit}",
               help=common.tip(m) + " Closed form (dse evaluate); the line below is its 90% "
               "interval.")
    interval_slots[m] = col.empty()
c[4].metric("Accept probability", f"{rep.p_accept:.3f}", help=common.tip("p_accept"))
controls()  # after the headline numbers, which the browser shows first
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
    where = f"{name} on GPUs (draft on {bd}, as the paper's baselines)"
    col.metric(f"Speed-up vs {name}", f"{g['speedup']:.2f}x",
               help=f"{where}: {base[name].latency_s_per_problem:.3f} s per problem. "
               + common.tip(name))
    paper_gain = (common.paper_j_per_token(common.key(base_states[name]))
                  / common.paper_j_per_token(params))
    col.metric(f"Energy gain vs {name}", f"{g['energy_gain']:.2f}x",
               delta=f"paper's accounting: {paper_gain:.2f}x", delta_color="off",
               delta_arrow="off",
               help=f"{where}: {base[name].j_per_token:.3f} J/token; above 1: this design "
               "spends less energy per token. This tool charges each device its idle power "
               "plus its dynamic power while busy; the paper's accounting (below the value) "
               "charges each device its operating power over the whole latency, as its "
               "reported energy gains do.")
why = {b: common.explain(params, common.key(base_states[b]), b) for b in base}
worse = [b for b, lines in why.items() if lines]
if worse:
    slower = [b for b in worse if gains[b]["speedup"] < 1]
    costlier = [b for b in worse if gains[b]["energy_gain"] < 1]
    title = "; ".join(x for x in (
        f"slower than {', '.join(slower)}" if slower else "",
        f"more energy per token than {', '.join(costlier)}" if costlier else "") if x)
    with st.expander(f"Why: {title}", expanded=False):
        for b in worse:
            for line in why[b]:
                st.markdown(f"- **{b}**: {line}")
c1, c2, _ = st.columns([1, 1, 4])
with c1:
    common.pin_button(state, key="wi_pin")
csv_slot = c2.empty()

# then the 90% intervals of this design and its baselines (factor moves by the mean-value
# model, about 30 ms each; the Uncertainty tab moves them by the closed form): the headline
# metrics' lines, the CSV, and the charts' error bars below
quick = common.report_quick_intervals(params)
quick_base = {b: common.report_quick_intervals(common.key(base_states[b])) for b in base}
for m, _, unit, fmt in HEADLINE_METRICS:
    if m in quick.intervals:
        lo, hi = quick.intervals[m]
        interval_slots[m].caption(f"90%: {lo:{fmt}}-{hi:{fmt}} {unit}")
csv_rows = views.metric_rows({f"{rep.schedule} (this)": quick,
                              **{f"{b} (GPU)": r for b, r in quick_base.items()}})
csv_slot.download_button("Metrics (CSV)", views.rows_csv(csv_rows),
                         file_name=f"whatif-{state.system}-{state.workload}.csv",
                         mime="text/csv", key="wi_download_csv",
                         help="this design and its GPU baselines, with their 90% intervals")

# A session's first run leaves the open tab's charts out, so that the browser shows the
# numbers without waiting for the chart library (a 4.7 MB script, about a second to load on a
# 2-core machine, during which the browser draws nothing of the page); a fragment reruns the
# page a moment later to draw them, and declares no timer on that run, so it stops.
defer_charts = not ss.get("wi_charts_ready")
ss["wi_charts_ready"] = True


@st.fragment(run_every=0.3)
def charts_follow() -> None:
    if ss.pop("wi_charts_pending", False):
        st.rerun()
    ss["wi_charts_pending"] = True
    st.caption("Drawing the charts...")


# only the open tab is drawn (the others cost nothing until chosen)
t_lat, t_unc, t_tl, t_roof, t_sens, t_cli = st.tabs(
    ["Latency and energy", "Uncertainty", "Timeline", "Roofline", "Sensitivity",
     "Command line"], key="wi_tab", on_change="rerun")
if t_lat.open and defer_charts:
    with t_lat:
        charts_follow()
elif t_lat.open:
    with t_lat:
        c1, c2 = st.columns(2)
        with c1:
            common.chart(charts.fig_breakdown({f"{rep.schedule} (this)": quick, **{
                f"{b} (GPU)": r for b, r in quick_base.items()}}), key="wi_fig_lat")
        with c2:
            iv_j = quick.intervals.get("energy_j_per_problem")
            common.chart(charts.fig_energy(views.energy_split(design, rep),
                                           None if iv_j is None else (iv_j[0], iv_j[1])),
                         key="wi_fig_energy")
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
        common.chart(charts.fig_intervals(views.interval_rows(with_iv)), key="wi_fig_intervals")
        iv = full.intervals
        st.caption("90% intervals (dse.uncertainty, each factor moved by the closed form, as "
                   "`dse evaluate`): latency "
                   f"{iv['latency_s_per_problem'][0]:.3f}-{iv['latency_s_per_problem'][1]:.3f}"
                   f" s, energy {iv['j_per_token'][0]:.3f}-{iv['j_per_token'][1]:.3f} J/token"
                   + (f", accuracy {iv['accuracy'][0]:.1f}-{iv['accuracy'][1]:.1f} %"
                      if "accuracy" in iv else "")
                   + ". Widths come from the cost models' cross-validated residuals and the "
                   "declared ranges; the baselines share this design's GPUs, so their errors "
                   "move together.")
        st.table(views.provenance_rows(full))  # a static table: long bases wrap
if t_tl.open:
    with t_tl:
        ss.setdefault("wi_timeline_seed", 0)
        st.number_input("Problem (seed)", min_value=0, step=1, key="wi_timeline_seed")
        tl = common.timeline(params, int(ss.wi_timeline_seed))
        common.chart(fig_timeline(tl), key="wi_fig_timeline")
        st.caption(f"Simulator replay of one synthetic problem: {tl.latency_s:.2f} s here, "
                   f"against {rep.latency_s_per_problem:.2f} s per problem on average (the "
                   "headline, closed form). One problem differs from the mean: its step count "
                   "and step lengths are drawn from the workload's distributions, and each "
                   "step's accept, reject or backtrack is drawn too; another seed is another "
                   "problem (`dse simulate` averages many). Decisions: "
                   + ", ".join(tl.decisions) + ". Red: step-ahead draft work a reject "
                   "discarded; grey on the draft row: waiting for the verdict.")
if t_roof.open:
    with t_roof:
        common.chart(fig_roofline(common.rooflines(params)), key="wi_fig_roofline")
        st.caption("Operating points at the problem's mean context, with the 90% interval of "
                   "their time (dse.uncertainty) as error bars. Solid: datasheet roofline; "
                   "dashed: what the serving profile or FPGA build reaches.")
if t_sens.open:
    with t_sens:
        common.chart(fig_tornado(common.tornado(params)), key="wi_fig_tornado")
        st.caption("Mean-value model (dse.symbolic, the search's model, within about 15% of "
                   "the closed form above): each term scaled by -10% / +10%, the others held.")
if t_cli.open:
    with t_cli:
        args = " ".join(f"--set {a}" for a in state.set_args())
        st.code(f"dse evaluate --system {state.system} --scenario {state.workload} "
                f"--schedule {state.params()['schedule']} {args}".rstrip(), language="bash")
        st.caption("This page's URL carries the design: copy it to share this view.")
