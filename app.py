"""hetero-dse dashboard: `streamlit run app.py`.

A thin view over the `dse` package: widgets, calls into dse, plotly figures. The pages live in
dashboard/ (not pages/, whose mere presence switches Streamlit to its older multipage mode and
breaks direct links to a page); the current design is shared between them and mirrored in the
URL's query parameters.
"""

import streamlit as st

from dashboard import common
from dse.core.process import retain_freed_memory

retain_freed_memory()  # the closed form's grids reuse freed memory (dse/core/process.py)
st.set_page_config(page_title="hetero-dse", layout="wide")
PAGES = [
    st.Page("dashboard/whatif.py", title="What-if", default=True),
    st.Page("dashboard/compare.py", title="Compare", url_path="compare"),
    st.Page("dashboard/design_space.py", title="Design space", url_path="design-space"),
    st.Page("dashboard/studies.py", title="Studies", url_path="studies"),
    st.Page("dashboard/load.py", title="Load", url_path="load"),
    st.Page("dashboard/paper.py", title="Paper", url_path="paper"),
    st.Page("dashboard/export.py", title="Export", url_path="export"),
    st.Page("dashboard/glossary.py", title="Glossary", url_path="glossary"),
]
common.keep_widget_state()
page = st.navigation(PAGES, position="top")
page.run()
common.freeze_heap(page.url_path)  # not reached by a run that stops or reruns early
