"""What-if: one design (speculative, the target alone or a width method: N samples of the target
ranked by a PRM, voted or searched; each role on its own device or some sharing one), its
metrics beside its target model alone and the GPU baselines, and where its time and energy
go."""

from __future__ import annotations

import functools
from dataclasses import replace

import streamlit as st

from dashboard import charts, common
from dashboard.whatif_controls import controls, load_widgets, widget_state
from dashboard.whatif_figures import fig_roofline, fig_timeline, fig_tornado
from dse import views
from dse.engine.closed_form import closed_form_caveats
from dse.errors import DseError
from dse.views import load as vl

cat = common.catalog()
ss = st.session_state

state = common.current_state()
load_widgets(state, force=False)
state = widget_state(state)
load = common.load_state()  # the load control's rate (none: single stream), as the Load page's
if "wi_load_rate" not in ss:
    ss["wi_load_rate"] = load.rate or 0.0
if (float(ss.wi_load_rate) or None) != load.rate:
    load = replace(load, rate=float(ss.wi_load_rate) or None)
    common.set_load_state(load)

st.title("What-if")
common.show_warning()
try:
    # the spec first: a combination its keys refuse (roles that share a device on different
    # devices) keeps the URL on the last design that had numbers
    state.spec(cat)
    common.set_state(state)
    design = common.design_of(state)
    rep = common.report(common.key(state))
except DseError as e:
    ss["wi_report"] = None
    st.error(f"No numbers for this design: {e}")
    controls()
    st.stop()
params = common.key(state)

ss["wi_report"] = rep.to_dict()
# the header names the state whose numbers follow (the URL carries the same one)
st.caption(views.design_label(design.system, design.schedule) + f" | {state.workload}")
for note in closed_form_caveats(rep):
    st.warning(f"Closed form: {note} (the Timeline tab replays one problem).")
# the unit in the label, the value a bare number: a metric in one of five columns cuts what
# does not fit ("4.000 J/to..." where the unit followed the value)
HEADLINE_METRICS = (("latency_s_per_problem", "Latency (s/problem)", "s", ".3f"),
                    ("goodput_tokens_per_s", "Goodput (tok/s)", "tok/s", ".1f"),
                    ("j_per_token", "Energy (J/token)", "J/token", ".3f"),
                    ("accuracy", "Accuracy (%)", "%", ".1f"))
c = st.columns(5)
interval_slots = {}
for col, (m, label, _unit, fmt) in zip(c, HEADLINE_METRICS, strict=False):
    v = getattr(rep, m)
    col.metric(label, "n/a" if v is None else f"{v:{fmt}}",
               help=common.tip(m) + " Closed form (dse evaluate); the line below is its 90% "
               "interval.")
    interval_slots[m] = col.empty()
c[4].metric("Accept probability", f"{rep.p_accept:.3f}",
            help=common.tip("p_accept") + (" The target alone keeps no draft step: 0."
                                           if not design.is_speculative else ""))
# A session's first run leaves out what the browser need not render before the numbers: the
# open tab's charts (the chart library, a 4.7 MB script, about a second to load on a 2-core
# machine, during which the browser draws nothing of the page); a fragment reruns the page a
# moment later to draw them, and declares no timer on that run, so it stops. The collapsed
# Hardware and models expander draws its widgets only when opened (controls).
first_run = not ss.get("wi_charts_ready")
controls()  # after the headline numbers, which the browser shows first

# ---- against the target alone: the same target placement with workflow = target-only
alone_state = state.target_alone()
alone = None
if design.workflow == "target-only":
    st.info("This design is the target model alone: the alternative every speculative or "
            "width design is weighed against. Choose **Speculative** or a width method under "
            "*Workflow* to see a design beside it.")
else:
    try:
        alone = common.report(common.key(alone_state))
    except DseError as e:
        st.caption(f"No target-alone alternative: {e}")
if alone is not None:
    ms = views.margins(rep, alone)
    st.markdown(f"**{views.margin_sentence(ms)}**", help=common.tip("target alone"))
    alone_slot = st.empty()  # the table, once the joint intervals are in (below)
    c1, c2 = st.columns([4, 1])
    c1.caption("T" + views.design_label(alone_state.spec(cat))[1:] + " | "
               f"{alone_state.workload} (`workflow=target-only`, the same target placement). "
               "The joint 90% interval of each difference moves every uncertain factor in "
               "both designs at once (its moves by the closed form, as `dse compare`).")
    with c2:
        common.pin_button(alone_state, key="wi_pin_alone", label="Pin the target alone")

# ---- the paper's homogeneous GPU baselines of this design (its draft moved to the PRM's GPU)
base_states = ({b: state.gpu_baseline(cat, b) for b in views.BASELINES}
               if design.is_speculative else {})
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
if gains:
    st.caption("Two energy accountings: the **energy gain** charges each device its idle "
               "power plus its dynamic power only while it is busy (a device that waits "
               "draws idle power); the **paper's accounting**, under each gain, charges "
               "every device its operating power for the whole latency, as the paper's "
               "reported energy gains do. They part where devices wait on each other.")
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

# then the 90% intervals of this design and the target alone, as `dse evaluate` gives them
# (factor moves by the closed form, 20-100 ms each, cached per design): the headline metrics'
# lines, the margins and the latency chart's error bars. The GPU baselines' intervals (three
# more designs, most of a new threshold's run) are computed where they are shown: the
# Uncertainty tab, and the CSV when it is downloaded.
quick = common.report_with_intervals(params)
others = {**({"target alone": alone_state} if alone is not None else {}),
          **{f"{b} (GPU)": base_states[b] for b in base}}
quick_others = {n: common.report_with_intervals(common.key(s)) if n == "target alone"
                else base[n.removesuffix(" (GPU)")] for n, s in others.items()}
for m, _, unit, fmt in HEADLINE_METRICS:
    if m in quick.intervals:
        lo, hi = quick.intervals[m]
        interval_slots[m].caption(f"90%: {lo:{fmt}}-{hi:{fmt}} {unit}")
if alone is not None:
    joint = common.joint_intervals(params, common.key(alone_state))
    # static tables (no data-grid canvas, drawn with the page): four rows each
    alone_slot.table(views.margin_rows(views.margins(rep, alone, joint)), hide_index=True)
this_name = f"{rep.schedule} (this)"


def metrics_csv(designs: dict[str, common.Params]) -> str:
    """The CSV, made when it is downloaded (the baselines' intervals then)."""
    return views.rows_csv(views.metric_rows(
        {n: common.report_with_intervals(p) for n, p in designs.items()}))


csv_designs = {this_name: params, **{n: common.key(s) for n, s in others.items()}}
csv_slot.download_button("Metrics (CSV)", functools.partial(metrics_csv, csv_designs),
                         file_name=f"whatif-{state.system}-{state.workload}.csv",
                         mime="text/csv", key="wi_download_csv",
                         help="this design, its target alone and its GPU baselines, with "
                         "their 90% intervals")

# ---- at a load: one replica at the load control's rate (dse serve, closed form, cached)
if load.rate is None:
    st.caption("Single stream: one problem at a time (the paper's setting). Set a request "
               "rate under *Load* in the sidebar to see this design serving many, or open "
               "the Load page for the rates around it.")
else:
    try:
        at_load = common.load_point(params, load.rate)
        st.markdown(f"**At {load.rate:g} requests/s** (one replica, the serving closed form: "
                    f"`dse serve --system ... --rate {load.rate:g}`)")
        if at_load["saturated"]:
            st.warning(f"Past this design's capacity ({at_load['capacity_request_rate']:.3g} "
                       "requests/s on one replica): the queue grows with the run, and these "
                       "are a 1,000-request run's figures.")
        st.table(vl.at_load_rows(at_load), hide_index=True)
    except (DseError, ValueError) as e:
        st.caption(f"No figures at {load.rate:g} requests/s: {e}")

defer_charts = first_run
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
if defer_charts:  # the follow-up run draws the charts
    with t_lat if t_lat.open else st.container():
        charts_follow()
elif t_lat.open:
    with t_lat:
        c1, c2 = st.columns(2)
        with c1:
            common.vega(charts.fig_breakdown({this_name: quick, **quick_others}),
                        key="wi_fig_lat")
            if base:
                st.caption("Error bars: the 90% interval of this design's and the target "
                           "alone's latency; the GPU baselines' are on the Uncertainty tab.")
        with c2:
            iv_j = quick.intervals.get("energy_j_per_problem")
            split = views.energy_split(design, rep)
            common.vega(charts.fig_energy(split), key="wi_fig_energy")
            st.caption(charts.energy_caption(split, None if iv_j is None
                                             else (iv_j[0], iv_j[1])))
        if design.is_speculative:
            st.caption(f"Communication share {rep.communication_share:.4%}; speculation stall "
                       f"{rep.speculation_stall_ratio:.2%}; wasted tokens "
                       f"{rep.wasted_tokens_per_problem:.1f} per problem "
                       f"({rep.wasted_energy_share:.2%} of energy); backtracks "
                       f"{rep.backtracks_per_problem:.2f} per problem."
                       + (" Roles sharing a device ("
                          + ", ".join("+".join(g) for g in design.colocated)
                          + "): its idle power is booked once, to the first of them."
                          if design.colocated else ""))
if t_unc.open:
    with t_unc:
        # the chart first on the page and drawn last: the tables below need only this design's
        # intervals (cached), so the browser draws them while the GPU baselines' intervals are
        # computed; until then the container keeps the last run's chart
        chart_box = st.container()
        full = common.report_with_intervals(params)
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
        if alone is not None:
            st.markdown("**Against the target alone: the joint 90% interval of each "
                        "difference**", help=common.tip("joint 90% interval"))
            joint = common.joint_intervals(params, common.key(alone_state))
            st.table(views.margin_rows(views.margins(rep, alone, joint)), hide_index=True)
            st.caption("Each uncertain factor moves both designs at once (dse.uncertainty."
                       "joint), so the errors they share (the target on its GPU, the "
                       "workload) cancel in the difference; 0 outside the interval: decided.")
        st.table(views.provenance_rows(full), hide_index=True)  # long bases wrap
        with_iv = {this_name: full,
                   **{n: common.report_with_intervals(common.key(s)) for n, s in others.items()}}
        with chart_box:
            common.vega(charts.fig_intervals(views.interval_rows(with_iv)),
                        key="wi_fig_intervals")
if t_tl.open:
    with t_tl:
        ss.setdefault("wi_timeline_seed", 0)
        st.number_input("Problem (seed)", min_value=0, step=1, key="wi_timeline_seed")
        tl = common.timeline(params, int(ss.wi_timeline_seed))
        common.chart(fig_timeline(tl), key="wi_fig_timeline")
        what = ("its step count and step lengths are drawn from the workload's distributions"
                + (", and each step's accept, reject or backtrack is drawn too"
                   if design.is_speculative else ""))
        st.caption(f"Simulator replay of one synthetic problem: {tl.latency_s:.2f} s here, "
                   f"against {rep.latency_s_per_problem:.2f} s per problem on average (the "
                   f"headline, closed form). One problem differs from the mean: {what}; "
                   "another seed is another problem (`dse simulate` averages many). "
                   + ("Decisions: " + ", ".join(tl.decisions) + ". Red: step-ahead draft "
                      "work a reject discarded; grey on the draft row: waiting for the "
                      "verdict." if design.is_speculative else
                      f"The target prefills the prompt once, then decodes its {design.samples} "
                      "samples as one batch; the PRM scores them as one batch (a search's "
                      "rounds drawn as one block)." if design.is_width else
                      "The target alone prefills the prompt, then writes every step."))
if t_roof.open:
    with t_roof:
        common.chart(fig_roofline(common.rooflines(params)), key="wi_fig_roofline")
        st.caption("Operating points at the problem's mean context, with the 90% interval of "
                   "their time (dse.uncertainty) as error bars. Solid: datasheet roofline; "
                   "dashed: what the serving profile or FPGA build reaches.")
if t_sens.open:
    with t_sens:
        if design.is_speculative:
            common.chart(fig_tornado(common.tornado(params)), key="wi_fig_tornado")
            st.caption("Mean-value model (dse.model.symbolic, the search's model, within about 15% "
                       "of the closed form above): each term scaled by -10% / +10%, the "
                       "others held.")
        else:
            st.info("The mean-value model's terms are a speculative design's (draft, "
                    "verifier, rewrites, probabilities); the target alone has one, its "
                    "decode, and a width design its batched decode and the PRM's batched "
                    "scoring: the Roofline tab shows where they stand.")
if t_cli.open:
    with t_cli:
        args = " ".join(f"--set {a}" for a in state.set_args())
        st.code(f"dse evaluate --system {state.system} --scenario {state.workload} "
                f"--schedule {state.params()['schedule']} {args}".rstrip(), language="bash")
        st.caption("This page's URL carries the design: copy it to share this view.")
