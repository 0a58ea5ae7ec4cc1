"""Export: the `dse export` bundle of the current design, as one zip."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import common
from dse import views
from dse.errors import DseError
from dse.views import bundle as bv
from dse.views.glossary import term_help

st.title("Export")
ss = st.session_state
state = common.current_state()
common.show_warning()  # a shared link's parameters that did not load
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
zip_name = f"{design.name}-{state.workload}-bundle.zip"
out_dir = f"{design.name}-{state.workload}"
st.download_button("Download the bundle (zip)", views.bundle_zip(files), file_name=zip_name,
                   mime="application/zip", key="ex_download", type="primary")
manifest = bv.manifest(files)
if manifest["projection_only"]:
    st.warning("Part of this bundle is projection only: "
               + "; ".join(f"{d}: {r}" for d, r in
                           sorted(manifest["projection_only_reasons"].items())))
st.subheader("Files")
listing: list[dict[str, Any]] = bv.file_rows(files)
st.dataframe(listing, key="ex_table", hide_index=True, column_config={
    "purpose": st.column_config.TextColumn(width="large"),
    "projection only": st.column_config.CheckboxColumn(help=term_help("projection only")),
    "why projection only": st.column_config.TextColumn(width="large")})

st.subheader("Next steps")
for i, step in enumerate(bv.next_steps(files, zip_name, out_dir), start=1):
    st.markdown(f"**{i}. {step.title}.** {step.remark}")
    if step.commands:
        st.code("\n".join(step.commands), language="bash")
for note in manifest["notes"]:
    st.caption(f"Note: {note}")
st.markdown("**The same bundle from the command line:**")
st.code(bv.export_command(state, out_dir), language="bash")

st.subheader("Preview")
if ss.get("ex_file") not in files:
    ss["ex_file"] = sorted(files)[0]
st.selectbox("File", sorted(files), key="ex_file")
try:
    st.code(files[ss.ex_file].decode("utf-8"), language=None)
except UnicodeDecodeError:
    st.caption("(binary file)")
