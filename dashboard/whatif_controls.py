"""What-if's sidebar: the widgets (each addressed by `wi_<system key>`), how a design state
loads into them and how their values make one, and the callbacks that keep a choice
consistent: a preset's knobs, a device's precision and software (and the memory options its
kind takes), and a placement's roles on one device with only the schedules it can run
(dse.views.choices)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import common
from dse import views
from dse.core.limits import MAX_SAMPLES
from dse.io.design_files import system_to_toml
from dse.model.schedules import DEVICE_ROLES, FLAGS, PRESETS
from dse.specs import SCHEMAS
from dse.specs.scenario import SystemSpec

ss = st.session_state
SYSTEM_KEYS = [k.toml for k in SCHEMAS["system"].keys]
# FPGA knobs whose widget shows 0 for "the default" (the key absent from the system)
DEFAULT_KNOBS = {k.toml for k in SCHEMAS["system"].keys if k.legacy_zero}
# the workflow widgets' values that stand for an absent key
ABSENT = {"workflow": "speculative", "verifier": "prm", "colocate": views.NO_COLOCATION,
          "aggregation": "default"}
DEFAULT_SAMPLES = 8  # a width workflow's N when the preset has none (best-of-8, 2501.07301)
ROLE_TITLES = {"draft": "Draft", "prm": "PRM", "target": "Target"}
# each role's KV-cache, offload and host-CPU keys: their widgets' words for an absent key and
# their overrides follow the device's kind (views.memory_overrides)
MEMORY_KEYS = {f"{r}_{o}" for r in DEVICE_ROLES for o in views.MEMORY_OPTIONS}
HARDWARE = "wi_hardware"  # the Hardware and models expander's open state


def wkey(toml_key: str) -> str:
    return f"wi_{toml_key}"


def _spec(state: views.DesignState) -> SystemSpec:
    return state.spec(common.catalog())


def load_widgets(state: views.DesignState, *, force: bool) -> None:
    """Put a state's values into the widgets' session keys (missing ones only, unless
    force)."""
    spec = _spec(state)
    values: dict[str, Any] = {k: v for k, v in system_to_toml(spec).items()
                              if k in SYSTEM_KEYS}
    values |= views.memory_widget_values(spec)  # an absent key: its widget's word for it
    values |= {"workflow": spec.workflow_name, "verifier": spec.verifier or ABSENT["verifier"],
               "colocate": spec.colocate or views.NO_COLOCATION,
               "aggregation": spec.aggregation or ABSENT["aggregation"]}
    params = state.params()
    values |= {"system": state.system, "workload": state.workload,
               "schedule": params["schedule"]}
    values |= {f: getattr(state.schedule, f) for f in FLAGS}
    for k, v in values.items():
        if force or wkey(k) not in ss:
            ss[wkey(k)] = v


def target_alone() -> bool:
    return bool(ss.get(wkey("workflow")) == "target-only")


def width() -> bool:
    """A width workflow: N samples of the target, ranked, voted or searched."""
    return ss.get(wkey("workflow")) in views.WORKFLOW_LABELS and ss.get(
        wkey("workflow")) not in ("speculative", "target-only")


def speculative() -> bool:
    return ss.get(wkey("workflow"), "speculative") == "speculative"


def own_device(role: str) -> bool:
    """Whether a role has a device widget in use (not a role the workflow leaves out, nor the
    verifier when the target judges)."""
    if target_alone():
        return role == "target"
    if width():
        return role == "target" or (role == "prm" and ss.get(wkey("workflow")) != "majority")
    return not (role == "prm" and ss.get(wkey("verifier")) == "target")


def arrangement_spec() -> SystemSpec:
    """The preset system with the widgets' workflow, verifier and placement (unchecked): what
    shares a device, before the devices are chosen."""
    base = common.catalog().get("system", ss.wi_system)
    assert isinstance(base, SystemSpec)
    return views.arrangement(base, ss[wkey("workflow")], ss[wkey("verifier")],
                             ss[wkey("colocate")])


# ------------------------------------------------------------------------------ callbacks

def on_system() -> None:
    preset = views.DesignState(ss.wi_system, ss.wi_workload, PRESETS[ss.wi_schedule])
    load_widgets(preset, force=True)


def on_schedule() -> None:
    for f in FLAGS:
        ss[wkey(f)] = getattr(PRESETS[ss.wi_schedule], f)


def fit_software(role: str) -> None:
    """Keep a role's precision and software valid on its (new) device."""
    opts = views.role_options(common.catalog(), role, ss[wkey(f"{role}_device")])
    if not views.runs_precision(common.catalog(), ss[wkey(f"{role}_device")],
                                ss.get(wkey(f"{role}_precision"))):
        ss[wkey(f"{role}_precision")] = opts.default_precision
    serving = wkey(f"{role}_{opts.software_key}")
    if ss.get(serving) not in opts.servings:
        ss[serving] = opts.default_serving


def fit_schedule() -> None:
    """Turn off the flags the placement forbids and choose the runnable preset nearest to
    the flags kept (views.runnable_flags)."""
    name, flags = views.runnable_flags(arrangement_spec(), {f: bool(ss[wkey(f)])
                                                            for f in FLAGS})
    for f, v in flags.items():
        ss[wkey(f)] = v
    ss.wi_schedule = name


def _move_colocated(anchor: str | None = None) -> None:
    devices = {r: ss[wkey(f"{r}_device")] for r in DEVICE_ROLES if own_device(r)}
    colocate = views.NO_COLOCATION if not speculative() else ss[wkey("colocate")]
    for r, dev in views.colocation_moves(colocate, devices, anchor).items():
        ss[wkey(f"{r}_device")] = dev
        fit_software(r)


def on_device(role: str) -> None:
    """A role's new device: its precision and software follow, and so do the roles it
    shares the device with."""
    fit_software(role)
    _move_colocated(anchor=role)


def on_colocate() -> None:
    """A new placement: its roles move onto one device (the target's, else the PRM's) and the
    schedule keeps only what the shared device allows."""
    _move_colocated()
    fit_schedule()


def on_verifier() -> None:
    """A new verifier: a placement that names the PRM keeps its other roles when the target
    judges (views.colocate_for_verifier), and the schedule what the shared device allows."""
    ss[wkey("colocate")] = views.colocate_for_verifier(ss[wkey("colocate")],
                                                       ss[wkey("verifier")])
    on_colocate()


def on_workflow() -> None:
    if width() and not ss.get(wkey("samples")):
        ss[wkey("samples")] = DEFAULT_SAMPLES
    if ss.get(wkey("workflow")) == "beam" and not ss.get(wkey("beam_width")):
        ss[wkey("beam_width")] = 1
    if speculative():
        fit_schedule()


def with_current(options: list[str], current: str) -> list[str]:
    """Options, keeping a current value that is not among them (e.g. a model file path)."""
    return options if current in options else [*options, current]


# ------------------------------------------------------------------------------ the widgets

# Every widget is drawn with its session value as its default (index / value), not only under
# its key. A widget's value reaches the browser with `set_value` only on the run that set it;
# a browser that draws the widget afresh from a later run's message (an early click during the
# session's first runs) otherwise shows, and sends back, the default: the first preset, which
# its callback then loads over the user's choice. Streamlit keys a widget by its `key` alone,
# so a changing default does not make it a new widget.

def select(box: Any, label: str, options: list[Any], key: str, **kw: Any) -> Any:
    cur = ss.get(key)
    return box.selectbox(label, options, key=key,
                         index=options.index(cur) if cur in options else 0, **kw)


def radio(box: Any, label: str, options: list[str], key: str, **kw: Any) -> Any:
    cur = ss.get(key)
    return box.radio(label, options, key=key,
                     index=options.index(cur) if cur in options else 0, **kw)


def toggle(box: Any, label: str, key: str, **kw: Any) -> Any:
    return box.toggle(label, key=key, value=bool(ss.get(key)), **kw)


def slider(box: Any, label: str, key: str, **kw: Any) -> Any:
    return box.slider(label, 0.0, 1.0, float(ss[key]), step=0.01, key=key, **kw)


def number(box: Any, label: str, key: str, *, min_value: float, step: float, **kw: Any) -> Any:
    """A number input of min_value's type (int or float), its value the session's (min_value
    while the session has none: a knob the preset leaves at its default)."""
    kind = type(min_value)
    cur = ss.get(key)
    return box.number_input(label, min_value=min_value,
                            value=kind(min_value if cur is None else cur), step=kind(step),
                            key=key, **kw)


# ------------------------------------------------------------------------------ the sidebar

def controls() -> None:
    """The sidebar's widgets (their values are in the session state already, so the page
    draws them after its headline numbers). Controls that do not apply are drawn disabled,
    so that they keep their values: a target-only design's verifier, placement, schedule,
    thresholds, draft and PRM; the PRM when the target judges; a flag or schedule the
    placement forbids (with the reason). The *Hardware and models* expander draws its 26
    widgets only while it is open (opening it reruns the page): collapsed, they cost the
    browser about 200 ms of its main thread on every rerun (each is re-rendered twice, stale
    then current), and the widgets' values outlive them in the design (widget_state)."""
    cat = common.catalog()
    sb = st.sidebar
    select(sb, "System preset", cat.names("system"), "wi_system", on_change=on_system,
           help="A named system from scenarios/systems; changing it resets the knobs below")
    select(sb, "Scenario (workload)", cat.names("workload"), "wi_workload")
    alone = not speculative()  # the target alone or a width design: no draft, no schedule
    radio(sb, "Workflow", list(views.WORKFLOW_LABELS), wkey("workflow"),
          format_func=views.WORKFLOW_LABELS.get, on_change=on_workflow,
          help=common.tip("workflow"))
    radio(sb, "Verifier", list(views.VERIFIER_LABELS), wkey("verifier"),
          format_func=views.VERIFIER_LABELS.get, on_change=on_verifier, disabled=alone,
          help=common.tip("verifier"))
    select(sb, "Placement", with_current(views.colocate_options(ss[wkey("verifier")]),
                                         ss[wkey("colocate")]),
           wkey("colocate"), format_func=lambda c: views.COLOCATE_LABELS.get(c, c),
           on_change=on_colocate, disabled=alone, help=common.tip("colocate"))
    if target_alone():
        sb.caption("The target alone writes every step: no draft, verifier, schedule or "
                   "thresholds (their controls keep their values for a return to "
                   "speculation).")
    if width():
        width_controls(sb)
    spec = arrangement_spec()
    runnable, why_not = views.schedule_choices(spec)
    banned = views.flag_conflicts(spec)
    select(sb, "Schedule", with_current(runnable, ss.wi_schedule), "wi_schedule",
           on_change=on_schedule, disabled=alone,
           format_func=lambda p: f"{p} (unavailable here)" if p in why_not else p,
           help="; ".join(f"{p}: {common.tip(p)}" for p in PRESETS))
    for f, label in (("backtracking", "Backtracking"),
                     ("step_ahead", "Step-ahead speculation (T2)"),
                     ("shadow_sync", "Shadow sync (T1)")):
        toggle(sb, label, wkey(f), disabled=alone or (f in banned and not ss[wkey(f)]),
               help=common.tip(f) + (f" Unavailable with this placement: {banned[f]}."
                                     if f in banned else ""))
    if why_not and not alone:
        sb.caption(f"Not offered on shared devices: {', '.join(why_not)} ("
                   + "; ".join(dict.fromkeys(banned.values())) + ").")
    sb.subheader("Thresholds and backtracking")
    slider(sb, "Accept threshold", wkey("accept_threshold"), disabled=alone,
           help=common.tip("accept_threshold"))
    slider(sb, "Backtrack threshold", wkey("backtrack_threshold"), disabled=alone,
           help=common.tip("backtrack threshold"))
    number(sb, "Max backtracks", wkey("max_backtracks"), min_value=0, step=1, disabled=alone,
           help=common.tip("max backtracks"))
    number(sb, "Backtrack window (steps)", wkey("backtrack_window"), min_value=1, step=1,
           disabled=alone, help=common.tip("backtrack window"))
    hardware = sb.expander("Hardware and models", key=HARDWARE, on_change="rerun")
    if hardware.open:
        with hardware:
            for role in DEVICE_ROLES:
                role_controls(role, spec)
            number(st, "Max context (tokens)", wkey("max_context_tokens"), min_value=1,
                   step=256)
    sb.button("Reset to preset", key="wi_reset", on_click=on_system)
    sb.subheader("Load")
    sb.number_input("Request rate (requests/s, 0 = single stream)", min_value=0.0,
                    max_value=1000.0, step=0.05, format="%g", key="wi_load_rate",
                    help="Poisson arrivals served by one replica of this design (dse serve "
                    "--rate, closed form): its throughput, TTFT and cost per million tokens "
                    "under the headline. The Load page plots them against the rate.")


def width_controls(sb: Any) -> None:
    """A width design's knobs: N samples (candidates per step of a search), the beams a beam
    search keeps and how the PRM scores a response (the system keys `samples`, `beam_width`,
    `aggregation`); the policy is the target, the verifier the PRM (none for majority)."""
    wf = ss[wkey("workflow")]
    number(sb, "Samples N (candidates per step of a search)", wkey("samples"), min_value=1,
           step=1, max_value=MAX_SAMPLES, help=common.tip("samples"))
    number(sb, "Beam width (beams kept, dividing N)", wkey("beam_width"), min_value=1, step=1,
           max_value=MAX_SAMPLES, disabled=wf != "beam", help=common.tip("beam_width"))
    select(sb, "PRM score of a response", list(views.AGGREGATION_LABELS), wkey("aggregation"),
           format_func=views.AGGREGATION_LABELS.get, disabled=wf == "majority",
           help=common.tip("aggregation"))
    sb.caption("N samples of the target (the policy) decode as one batch; "
               + ("they are voted on: no verifier, no PRM." if wf == "majority" else
                  "the PRM scores them as one batch.")
               + " No draft, schedule or thresholds.")


def role_controls(role: str, spec: SystemSpec) -> None:
    """One role's device, model, precision, software (and tensor parallelism, FPGA build);
    disabled when the design does not use them. A role that shares a device is offered only
    the devices every role of its group can run on."""
    cat = common.catalog()
    off = not own_device(role)
    st.markdown(f"**{ROLE_TITLES[role]}**", help=common.tip(role))
    if off:
        st.caption("not used: " + ("the target alone writes every step" if target_alone()
                                   else "a width design samples the target" if width()
                                   else "the target judges each step"))
    dev = ss[wkey(f"{role}_device")]
    opts = views.role_options(cat, role, dev)
    group = next((g for g in spec.colocated if role in g), ())
    shared = [r for r in group if own_device(r)]
    devices = views.shared_devices(cat, shared) if len(shared) > 1 else opts.devices
    select(st, "Device", with_current(devices, dev), wkey(f"{role}_device"),
           on_change=on_device, args=(role,), disabled=off,
           help=(f"shared with the {' and '.join(r for r in shared if r != role)}"
                 if len(shared) > 1 else None))
    select(st, "Model", with_current(opts.models, ss[wkey(f"{role}_model")]),
           wkey(f"{role}_model"), disabled=off)
    # full width: the sidebar is too narrow for two selectboxes side by side
    select(st, "Precision", with_current(opts.precisions, ss[wkey(f"{role}_precision")]),
           wkey(f"{role}_precision"), disabled=off)
    serving = wkey(f"{role}_{opts.software_key}")
    if serving not in ss:  # a key the preset leaves at its default
        ss[serving] = opts.default_serving
    select(st, opts.serving_label, with_current(opts.servings, ss[serving]), serving,
           disabled=off)
    if role == "target":
        number(st, "Tensor parallel GPUs", wkey("target_tp"), min_value=1, step=1)
    memory_controls(role, dev, opts, off)
    if role == "draft" and opts.build_knobs:  # the system's fpga_* knob keys
        r = views.build_knob_ranges(cat, dev)
        number(st, "FPGA clock (MHz, 0 = board default)", wkey("fpga_clock_MHz"), min_value=0.0,
               step=25.0, disabled=off,
               help=f"{dev}: {r['clock_min_mhz']:g}-{r['clock_max_mhz']:g} MHz, "
               f"default {r['clock_default_mhz']:g}")
        number(st, "Memory channels (0 = all)", wkey("fpga_memory_channels"), min_value=0,
               step=1, disabled=off, help=f"{dev} has {r['channels_max']:g}")
        number(st, "MAC lanes (0 = default)", wkey("fpga_mac_lanes"), min_value=0, step=256,
               disabled=off)


def memory_controls(role: str, dev: str, opts: views.RoleOptions, off: bool) -> None:
    """A role's KV cache, weight offload and host CPU (`<role>_kv_precision`,
    `<role>_offload_fraction`, `<role>_host_cpu_slowdown`), each enabled where the device's
    kind takes it (views.supports) and disabled, keeping its value, otherwise; the widgets'
    words for an absent key ("16", 0) make no override."""
    why_not = {"kv_precision": f"{dev} fixes its KV-cache width in its build: not applied. ",
               "offload_fraction": f"{dev} holds every weight in its own memory: not "
               "applied. ",
               "host_cpu_slowdown": f"{dev}'s costs have no host CPU term: not applied. "}
    if views.supports(opts, "host_cpu_slowdown"):
        why_not["host_cpu_slowdown"] = (f"{dev}'s own host: {opts.host_cpu_slowdown:g} "
                                        f"({opts.host_cpu_source}). ")
    for o in views.MEMORY_OPTIONS:
        if views.supports(opts, o) and o != "host_cpu_slowdown":
            why_not[o] = ""

    def kw(o: str) -> dict[str, Any]:
        return {"disabled": off or not views.supports(opts, o),
                "help": why_not[o] + common.tip(o)}

    kv, offload, host = (wkey(f"{role}_{o}") for o in views.MEMORY_OPTIONS)
    select(st, "KV cache", with_current(opts.kv_choices, ss[kv]), kv,
           format_func=views.kv_label, **kw("kv_precision"))
    number(st, "Weights offloaded to host", offload, min_value=0.0, step=0.05,
           max_value=max(views.OFFLOAD_WIDGET_MAX, float(ss[offload])), format="%g",
           **kw("offload_fraction"))
    number(st, "Host CPU slowdown (0 = board default)", host, min_value=0.0, step=0.1,
           format="%g", **kw("host_cpu_slowdown"))


def widget_state(state: views.DesignState) -> views.DesignState:
    """The design the widgets' session values describe (`state`: the one they were loaded
    from), with only the keys that design uses (views.applicable)."""
    cat = common.catalog()
    # widgets not shown this run (e.g. FPGA knobs of a GPU draft) keep the state's values
    cur = system_to_toml(_spec(state))
    base = system_to_toml(cat.get("system", ss.wi_system))  # type: ignore[arg-type]
    values = {k: ss.get(wkey(k), cur.get(k)) for k in SYSTEM_KEYS if k not in MEMORY_KEYS}
    for k, absent in ABSENT.items():  # the widgets' word for an absent key
        if values.get(k) == absent and base.get(k) is None:
            values[k] = None
    # optional keys (prm_tp) may be absent from both: no override
    overrides = {k: v for k, v in values.items() if base.get(k) != v and v is not None
                 and not (v == 0 and k in DEFAULT_KNOBS and k not in base)}
    # a build knob's widget at 0 is its default: the preset's key cleared ("" is absent)
    overrides |= {k: "" for k in DEFAULT_KNOBS if overrides.get(k) == 0}
    # a role's software, build knobs and memory options follow its device: switching to a
    # preset whose draft is on a GPU must not carry the FPGA preset's engine and knobs along
    # as overrides, nor a GPU draft's KV cache, offload or host CPU onto an FPGA
    shown = views.memory_widget_values(_spec(state))  # widgets not drawn: the state's values
    for role in DEVICE_ROLES:
        device = overrides.get(f"{role}_device", base.get(f"{role}_device"))
        if not isinstance(device, str):
            continue
        opts = views.role_options(cat, role, device)
        for key in ("serving", "engine"):
            if key != opts.software_key:
                overrides.pop(f"{role}_{key}", None)
        if role == "draft" and not opts.build_knobs:
            for k in DEFAULT_KNOBS:
                overrides.pop(k, None)
        memory = {o: ss.get(wkey(f"{role}_{o}"), shown[f"{role}_{o}"])
                  for o in views.MEMORY_OPTIONS}
        overrides |= views.memory_overrides(opts, role, memory, base)
    sched = PRESETS[ss.wi_schedule].with_flags(**{f: bool(ss[wkey(f)]) for f in FLAGS})
    return views.applicable(views.DesignState(ss.wi_system, ss.wi_workload, sched, overrides))
