"""The paper rows' 90% intervals for the Paper page, computed once per server in the
background.

`dse.paper.coverage.paper_rows` re-evaluates every `dse reproduce` row once per
uncertainty factor (about a minute on a laptop core), so the page shows the central rows
(`common.paper_rows`, seconds) at once and merges these in when the future is done.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future

import streamlit as st

from dashboard import common
from dse.paper.reproduce import Row


@st.cache_resource(show_spinner=False)
def interval_rows() -> Future[list[Row]]:
    """A future of the rows with their intervals; started on the first call of a server (a
    daemon thread, so a stopping server does not wait for it)."""
    from dse.paper import coverage

    fut: Future[list[Row]] = Future()
    cat = common.catalog()

    def work() -> None:
        try:
            fut.set_result(coverage.paper_rows(cat))
        except Exception as e:  # handed to the page, which shows it
            fut.set_exception(e)

    threading.Thread(target=work, name="paper-intervals", daemon=True).start()
    return fut
