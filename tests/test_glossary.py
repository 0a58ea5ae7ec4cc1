"""dse.views.glossary: every term defined, every schedule preset and flag has an entry, lookups
by alias, a clear error for an unknown term, anchors unique."""

from __future__ import annotations

import pytest

from dse.model.schedules import FLAGS, PRESETS
from dse.views import glossary

REQUIRED = ("goodput", "p_accept", "accept threshold", "backtrack threshold", "backtracking",
            "rsd", "brsd", "brsd_stepahead", "heteroreason", "T1", "T2", "PRM", "draft",
            "target", "critical path", "prefetch", "shadow sync", "speculation stall",
            "wasted tokens", "communication share", "J/token", "closed form",
            "mean-value model", "90% interval", "provenance", "calibrated vs predicted row",
            "roofline", "serving profile")


@pytest.mark.parametrize("t", glossary.TERMS, ids=lambda t: t.name)
def test_every_term_is_defined_in_a_sentence_or_two(t):
    assert t.name.strip() and t.definition.strip()
    assert t.definition.endswith(".") and t.definition.count(". ") <= 2
    assert len(t.definition) < 420


@pytest.mark.parametrize("name", [*PRESETS, *FLAGS, *REQUIRED])
def test_presets_flags_and_required_terms_have_entries(name):
    assert glossary.term_help(name)


def test_aliases_ignore_case_and_separators():
    assert glossary.term("step_ahead") is glossary.term("T2 (step-ahead speculation)")
    assert glossary.term("Shadow-Sync") is glossary.term("shadow sync")
    assert glossary.term("ACCEPT_THRESHOLD").name == "accept threshold"


def test_unknown_term_lists_the_terms():
    with pytest.raises(KeyError, match="no glossary term 'warp drive'; terms: latency per "
                       "problem, accuracy"):
        glossary.term_help("warp drive")


def test_anchors_are_unique_and_url_safe():
    anchors = [t.anchor for t in glossary.TERMS]
    assert len(set(anchors)) == len(anchors)
    assert all(a and all(c.isalnum() or c == "-" for c in a) for a in anchors)
    assert glossary.term("T2").anchor == "t2-step-ahead-speculation"


def test_search_needs_every_word():
    assert glossary.search("") == list(glossary.TERMS)
    hits = glossary.search("shadow prefill")
    assert hits and all("shadow" in (t.name + t.definition).lower() for t in hits)
    assert glossary.term("T1") in hits and glossary.term("goodput") not in hits
    assert glossary.search("no-such-word") == []


def test_a_duplicate_name_fails_loudly():
    t = glossary.Term("goodput", "again.")
    with pytest.raises(ValueError, match="names both"):
        glossary._index((*glossary.TERMS, t))
