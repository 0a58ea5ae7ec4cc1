"""Shared links: a bad or unknown URL parameter is a warning naming it, never an exception,
and the rest of the link still loads; pins beyond the limit and bad pins get one short
warning each kind."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dse import views

BAD = [
    ("draft_device", "nope", "unknown device"),
    ("prm_device", "pcie-gen4-x16", "unknown device"),  # a link's name as a device
    ("target_model", "gpt-5", "unknown model"),
    ("target_serving", "flexllm", "unknown"),  # an FPGA engine as a GPU serving profile
    ("accept_threshold", "1.7", "accept_threshold"),
    ("max_backtracks", "-3", "max_backtracks"),
    ("step_ahead", "maybe", "step_ahead"),
]


@pytest.mark.parametrize("key, value, why", BAD)
def test_a_bad_parameter_is_dropped_with_a_warning_naming_it(cat, key, value, why):
    state, warnings = views.url_state(cat, {"accept_threshold": "0.8", key: value}
                                      if key != "accept_threshold" else {key: value})
    assert len(warnings) == 1 and key in warnings[0] and why in warnings[0]
    if key != "accept_threshold":  # the rest of the link is kept
        assert state.overrides.get("accept_threshold") == 0.8
    assert key not in state.overrides


def test_unknown_parameters_are_ignored_not_fatal(cat):
    state, warnings = views.url_state(cat, {"fbclid": "IwAR0x", "utm_source": "mail",
                                            "accept_threshold": "0.85",
                                            "workload": "gsm8k"})
    assert state.workload == "gsm8k" and state.overrides == {"accept_threshold": 0.85}
    assert warnings == ["ignored URL parameters that are no design key: fbclid, utm_source"]


def test_unknown_system_workload_and_schedule_fall_back_with_a_warning(cat):
    state, warnings = views.url_state(cat, {"system": "zzz", "workload": "aime",
                                            "schedule": "fast"})
    d = views.default_state()
    assert (state.system, state.workload, state.schedule.name) == (
        d.system, d.workload, d.schedule.name)
    assert [w.split("=")[0] for w in warnings] == [
        "URL parameter system", "URL parameter workload", "URL parameter schedule"]


def test_parameters_that_do_not_combine_show_the_system_as_shipped(cat):
    """Each value alone is valid; together they are not (two roles said to share a device
    that are on different devices): the warning says why."""
    state, warnings = views.url_state(cat, {"colocate": "draft+target",
                                            "draft_device": "rtx-3090",
                                            "target_device": "a100-80gb-pcie"})
    assert state.overrides == {} and len(warnings) == 1 and "do not combine" in warnings[0]


@settings(max_examples=60, deadline=None)
@given(params=st.dictionaries(st.sampled_from(
    ["system", "workload", "schedule", "draft_device", "prm_device", "target_device",
     "accept_threshold", "draft_model", "fbclid", "step_ahead", "colocate", "verifier",
     "workflow", "fpga.clock_mhz", "max_context_tokens"]),
    st.one_of(st.text(max_size=12), st.sampled_from(
        ["u280", "a100-80gb-pcie", "0.5", "1e309", "nan", "true", "target-only", "-1"])),
    max_size=6))
def test_any_link_loads_without_raising(cat, params):
    state, warnings = views.url_state(cat, params)
    state.spec(cat)  # what it returns is a valid state
    assert all(isinstance(w, str) and len(w) < 600 for w in warnings)


def test_pins_beyond_the_limit_and_bad_pins_get_one_short_warning_each(cat):
    good = [views.encode_pin(views.DesignState(
        views.DEFAULT_SYSTEM, views.DEFAULT_WORKLOAD, views.default_state().schedule,
        {"accept_threshold": round(0.5 + i / 100, 2)})) for i in range(12)]
    bad = [urlencode({"system": views.DEFAULT_SYSTEM, "draft_device": f"nope{i}"})
           for i in range(990)]
    states, errors = views.decode_pins(cat, good + bad)
    assert len(states) == views.MAX_PINS
    assert len(errors) == 2 and sum(len(e) for e in errors) < 600
    assert errors[0].startswith("990 pinned designs did not load")
    assert errors[1] == f"4 pinned designs beyond the limit of {views.MAX_PINS} dropped"
