"""Glossary: every term of the tool and the paper in a sentence or two, searchable, each with
an anchor (`/glossary#<term>`) other pages can link to."""

from __future__ import annotations

import streamlit as st

from dse.views import glossary

st.title("Glossary")
st.caption("The terms of hetero-dse and of the HeteroReason paper, as this tool models them "
           "(docs/model.md, docs/uncertainty.md). The same text is the tooltip of the widgets "
           "that use a term.")
query = st.text_input("Filter", key="gl_filter", placeholder="a word, e.g. backtrack",
                      help="shows the terms whose name or definition holds every word")
terms = glossary.search(query)
st.caption(f"{len(terms)} of {len(glossary.TERMS)} terms")
if not terms:
    st.info("No term matches the filter.")
for t in terms:
    st.subheader(t.name, anchor=t.anchor)
    st.markdown(t.definition)
    if t.aliases:
        st.caption("Also: " + ", ".join(f"`{a}`" for a in t.aliases))
