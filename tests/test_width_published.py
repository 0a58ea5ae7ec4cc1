"""Checks on dse/data/width_published.toml (published best-of-N / majority / search
accuracies, data only)."""

import re
import tomllib
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[1] / "dse" / "data" / "width_published.toml"

METHODS = {"best-of-n", "weighted-best-of-n", "majority", "step-search", "beam", "pass-at-n",
           "greedy"}
OTHER_METHODS = METHODS | {"compute-optimal"}
AGGREGATIONS = {"last", "min", "product", "mean", "outcome", "llm-pointwise", "llm-pairwise",
                "none", "unknown"}

# The fit-allowed sources, matched on the row's source string.
FIT_ALLOWED_SOURCES = [
    re.compile(r"^arXiv:2501\.07301 Table (6|11|13|15)\b"),  # only these tables of that paper
    re.compile(r"^arXiv:2412\.01981\b"),  # Implicit PRM
    re.compile(r"^github RLHFlow/RLHF-Reward-Modeling\b"),  # RLHFlow PRM README tables
    re.compile(r"^arXiv:2312\.08935\b"),  # Math-Shepherd
    re.compile(r"^arXiv:2502\.06703"),  # compute-optimal TTS
    re.compile(r"huggingface\.co/spaces/HuggingFaceH4/blogpost-scaling-test-time-compute"),
    re.compile(r"^github huggingface/search-and-learn\b"),
]


@pytest.fixture(scope="module")
def data():
    with PATH.open("rb") as f:
        return tomllib.load(f)


def _all_entries(data):
    for table in ("row", "held_out", "other", "solo", "prm"):
        for entry in data.get(table, []):
            yield table, entry


def _is_fit_allowed_source(source):
    return any(p.search(source) for p in FIT_ALLOWED_SOURCES)


def test_schema_and_tables_present(data):
    assert data["schema_version"] == 1
    for table in ("row", "held_out", "solo", "prm"):
        assert data.get(table), f"no [[{table}]] entries"


def test_ids_unique(data):
    ids = [e["id"] for _, e in _all_entries(data)]
    dups = sorted({i for i in ids if ids.count(i) > 1})
    assert not dups, dups[:10]
    assert all(" " not in i for i in ids)


def test_source_and_setting_non_empty(data):
    for table, e in _all_entries(data):
        assert isinstance(e.get("source"), str) and e["source"].strip(), (table, e["id"])
        assert isinstance(e.get("setting"), str) and e["setting"].strip(), (table, e["id"])


def test_doc_references_resolve(data):
    src_docs = data.get("source_docs", {})
    set_docs = data.get("setting_docs", {})
    for table, e in _all_entries(data):
        if "source_doc" in e:
            doc = e["source_doc"]
            assert doc in src_docs and src_docs[doc].strip(), (table, e["id"])
        if "setting_doc" in e:
            doc = e["setting_doc"]
            assert doc in set_docs and set_docs[doc].strip(), (table, e["id"])


def test_accuracy_range(data):
    for table in ("row", "held_out", "other", "solo"):
        for e in data[table] if table in data else []:
            acc = e["accuracy_pct"]
            assert isinstance(acc, (int, float)) and not isinstance(acc, bool), e["id"]
            assert 0.0 <= acc <= 100.0, e["id"]
            assert isinstance(e["n_problems"], int) and e["n_problems"] >= 0, e["id"]
    for e in data["prm"]:
        for subset in ("gsm8k", "math", "olympiadbench", "omnimath"):
            assert 0.0 <= e["processbench_f1"][subset] <= 100.0, e["id"]
        assert e["hf_repo"] == e["hf_repo"].lower(), e["id"]


def test_rows_samples_methods_aggregations(data):
    for table in ("row", "held_out"):
        for e in data[table]:
            assert isinstance(e["samples"], int) and not isinstance(e["samples"], bool), e["id"]
            assert e["samples"] >= 1, e["id"]
            assert e["method"] in METHODS, (e["id"], e["method"])
            assert e["aggregation"] in AGGREGATIONS, (e["id"], e["aggregation"])
            assert e["policy"] == e["policy"].lower(), e["id"]
            assert e["verifier"] == e["verifier"].lower(), e["id"]
            if e["method"] in ("majority", "pass-at-n"):
                assert e["verifier"] == "none", e["id"]
    for e in data.get("other", []):
        assert e["method"] in OTHER_METHODS, (e["id"], e["method"])
        assert e["aggregation"] in AGGREGATIONS, (e["id"], e["aggregation"])


def test_fit_allowed_rows_come_from_allowed_sources(data):
    for table in ("row", "other"):
        for e in data.get(table, []):
            if e.get("fit_allowed", False):
                assert _is_fit_allowed_source(e["source"]), (table, e["id"], e["source"][:80])
    for e in data["row"]:
        assert e["fit_allowed"] is True, e["id"]


def test_held_out_rows_are_not_fit_allowed(data):
    for e in data["held_out"]:
        assert e.get("fit_allowed", False) is False, e["id"]


def test_held_out_tables_of_the_lessons_paper_are_not_in_rows(data):
    # 2501.07301 tables other than 6, 11, 13, 15 are held out.
    for e in data["row"]:
        m = re.match(r"^arXiv:2501\.07301 Table (\d+)\b", e["source"])
        if m:
            assert m.group(1) in {"6", "11", "13", "15"}, e["id"]
