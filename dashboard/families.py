"""The Design space page's families section: each family's best design (the target alone, a
GPU draft, an FPGA draft) beside the search's winner, by the accurate closed form with its 90%
intervals and its margin against the winner with the joint 90% interval of the difference
(dse.views.families); the statement when no speculative design beats the target alone; a
family's best to open in What-if or to pin for Compare."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from dashboard import common
from dse import views
from dse.search.families import FamilyBest
from dse.views import families as vf
from dse.views import search as vs


def verdict(fams: Sequence[FamilyBest], objectives: Sequence[str]) -> None:
    """The answer against the target alone, in one line (above the front): no speculative
    design beats it, or by how much the winner does (nothing without families)."""
    if not fams:
        return
    if line := vf.families_verdict(fams, objectives):
        st.warning(line)
    elif line := vf.winner_vs_target_alone(fams, objectives):
        st.info(line + " The best of each family is below the picked design.")
    else:
        st.caption("No target-only design in this space: list `target-only` under "
                   "`[workflows] workflow` in the space file to weigh the target alone.")
    for note in vf.idle_draft_notes(fams, objectives):
        st.caption(note)


def show(fams: Sequence[FamilyBest], objectives: Sequence[str]) -> None:
    """The families table and its actions (nothing for a result without families)."""
    if not fams:
        return
    ss = st.session_state
    st.subheader("Against the alternatives: the best of each family",
                 help=common.tip("family"))
    rows = vf.family_rows(fams, objectives)
    st.dataframe(rows, key="ds_families", hide_index=True)
    st.caption("Accurate closed form (What-if's numbers) with 90% intervals; a margin is the "
               f"family's best minus the winner on {vs.label(objectives[0]).words} (and the "
               "other two metrics), in brackets the joint 90% interval of the difference "
               "(errors the two designs share cancel); 0 outside it: the difference is "
               "decided. The steps the target writes: 1 - accept probability. Evidence: "
               "devices without a published measurement and extrapolated components.")
    st.download_button("Download the families (CSV)", vs.csv_text(rows),
                       file_name="families.csv", mime="text/csv", key="ds_download_families")
    have = [i for i, f in enumerate(fams) if f.candidate is not None]
    if not have:
        return
    if ss.get("ds_family") not in have:
        ss["ds_family"] = have[0]
    c1, c2, c3 = st.columns([2, 1, 1])
    i = c1.selectbox("A family's best", have, key="ds_family",
                     format_func=lambda j: vf.FAMILY_LABELS.get(fams[j].family,
                                                                fams[j].family))
    cand = fams[i].candidate
    assert cand is not None
    state = views.state_from_design(common.catalog(), cand.design)
    if c2.button("Open this one in What-if", key="ds_family_open"):
        common.open_in_whatif(state)
    with c3:
        common.pin_button(state, key="ds_family_pin", label="Pin this one")
