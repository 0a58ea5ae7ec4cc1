"""Export: the `dse export` bundle of the current design, as one zip."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import common
from dse import views
from dse.errors import DseError

st.title("Export")
ss = st.session_state
state = common.current_state()
common.set_state(state)
try:
    from dse.exporters import render_bundle
except ImportError as e:
    st.info(f"Export is not available in this build ({e}).")
    st.stop()


@st.cache_data(max_entries=64, show_spinner="Rendering the bundle")
def bundle(params: common.Params) -> dict[str, bytes]:
    s = common.state_of(params)
    cat = common.catalog()
    return dict(render_bundle(cat, common.design_of(s), cat.get("workload", s.workload)))


try:
    design = common.design_of(state)
    files = bundle(common.key(state))
except DseError as e:
    st.error(f"No bundle for this design: {e}")
    st.stop()

st.caption(views.design_label(design.system, design.schedule) + f" | {state.workload}")
if not files:
    st.warning("The exporter returned no file for this design.")
    st.stop()
st.download_button("Download the bundle (zip)", views.bundle_zip(files),
                   file_name=f"{design.name}-{state.workload}-bundle.zip",
                   mime="application/zip", key="ex_download", type="primary")
listing: list[dict[str, Any]] = [{"file": p, "bytes": len(files[p])} for p in sorted(files)]
st.dataframe(listing, key="ex_table", hide_index=True)
if ss.get("ex_file") not in files:
    ss["ex_file"] = sorted(files)[0]
st.selectbox("Preview", sorted(files), key="ex_file")
try:
    st.code(files[ss.ex_file].decode("utf-8"), language=None)
except UnicodeDecodeError:
    st.caption("(binary file)")
