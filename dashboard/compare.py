"""Compare: the pinned designs side by side (metrics with their 90% intervals and deltas
against a reference, the latency and energy breakdowns), kept in the URL."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import charts, common
from dse import views
from dse.errors import DseError

st.title("Compare")
ss = st.session_state
cat = common.catalog()
current = common.current_state()
common.show_warning()  # a shared link's parameters that did not load
common.set_state(current)  # the URL keeps the current design and the pinned set
pinned = common.pins()
if msg := ss.pop("pins_warning", None):
    st.warning(msg)

c1, c2, _ = st.columns([1, 1, 3])
with c1:
    common.pin_button(current, key="cp_pin_current", label="Pin the What-if design")
c2.button("Unpin all", key="cp_clear", disabled=not pinned, on_click=common.unpin_all)
if not pinned:
    st.info("No design pinned yet: use **Pin to compare** on What-if, Design space or "
            "Studies, or the button above. The pinned set lives in the URL, so a link "
            "reopens it.")
    st.stop()

pinned_names = [views.short_label(s, i) for i, s in enumerate(pinned)]
# the simplest alternative on the table: each pinned design's target alone, unless pinned
alts = views.unpinned_alternatives(pinned)
names = [*pinned_names, *(f"target alone of #{i + 1}" for i, _ in alts)]
shown = [*pinned, *(s for _, s in alts)]
reports: dict[str, Any] = {}
errors: dict[str, str] = {}
with st.spinner("Evaluating the pinned designs with their 90% intervals"):
    for n, s in zip(names, shown, strict=True):
        try:
            reports[n] = common.report_with_intervals(common.key(s))
        except DseError as e:
            errors[n] = str(e)
for n, e in errors.items():
    st.error(f"{n}: no numbers ({e})")

ok = [n for n in names if n in reports]
if ok:
    if ss.get("cp_reference") not in ok:
        ss["cp_reference"] = ok[0]
    c1, c2 = st.columns([2, 3])
    c1.selectbox("Reference (deltas are against it)", ok, key="cp_reference")
    c2.toggle("Joint 90% intervals of the differences", key="cp_joint",
              help=common.tip("joint 90% interval") + " About a second per design; only for "
              "designs on the reference's workload.")
    rows = views.metric_rows({n: reports[n] for n in ok})
    delta = {d["design"]: d for d in views.deltas(rows, ss.cp_reference)}
    joint: dict[str, dict[str, tuple[float, float]]] = {}
    if ss.get("cp_joint"):
        ref = shown[names.index(ss.cp_reference)]
        with st.spinner("The joint 90% interval of each difference"):
            for n in ok:
                s = shown[names.index(n)]
                if n != ss.cp_reference and s.workload == ref.workload:
                    joint[n] = common.joint_intervals(common.key(s), common.key(ref))
    table = views.compare_table(rows, delta, {n: shown[names.index(n)].spec(cat) for n in ok},
                                joint)
    across = views.side_by_side(table)
    st.dataframe(across, key="cp_table", hide_index=True,
                 height=36 * (len(across) + 1))  # every row, no inner scroll
    st.caption("Closed form with 90% intervals (factor moves by the closed form, as "
               "`dse evaluate`); deltas are relative to the reference (accuracy in points). "
               "Designs on the same GPUs share those GPUs' errors, so their difference is "
               "surer than the two intervals suggest: the joint 90% interval of each "
               "difference (the toggle) moves every factor in both designs at once. A role a "
               "design does not run (the target alone's draft and verifier) reads none. "
               "Each pinned speculative or width design's target alone (the simplest "
               "alternative) is shown beside the pinned set unless it is pinned itself.")
    csv_rows = [r | {k: v for k, v in delta[r["design"]].items() if k != "design"}
                | views.joint_csv_columns(joint.get(r["design"], {})) for r in rows]
    st.download_button("Comparison (CSV)", views.rows_csv(csv_rows),
                       file_name="compare.csv", mime="text/csv", key="cp_download_csv")
    sub = {n: reports[n] for n in ok}
    common.vega(charts.fig_intervals(views.interval_rows(sub)), key="cp_fig_intervals")
    c1, c2 = st.columns(2)
    with c1:
        common.vega(charts.fig_breakdown(sub), key="cp_fig_latency")
    with c2:
        common.vega(charts.fig_energy_designs(sub), key="cp_fig_energy")

st.subheader("Pinned designs")
for i, (n, s) in enumerate(zip(pinned_names, pinned, strict=True)):
    c1, c2, c3 = st.columns([6, 1, 1])
    c1.markdown(f"**{n}**: {views.design_label(s.spec(cat), s.schedule)} | {s.workload}")
    if c2.button("Open in What-if", key=f"cp_open_{i}"):
        common.open_in_whatif(s)
    c3.button("Unpin", key=f"cp_unpin_{i}", on_click=common.unpin, args=(s,))
