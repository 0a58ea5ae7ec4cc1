"""Figure data for the dashboard (app.py): pure functions over dse's designs and reports.

The dashboard is a thin view: every number it draws comes from here or from `evaluate`. This
package holds the small pieces of arithmetic and bookkeeping a figure needs and the round trip
between a design and the URL's query parameters, so they are tested without Streamlit.
Nothing here imports Streamlit or plotly. One module per concern:

- `state`: the design state, its URL round trip, design files as states, design labels, the
  target alone of a design;
- `choices`: widget choices (a role's devices, models, precisions, software; its KV-cache,
  weight-offload and host-CPU options and the overrides those widgets make; build knobs; the
  workflows, verifiers and placements, and the schedules and flags a placement allows);
- `alternative`: a design against its target model alone (margins, joint 90% intervals of
  the differences, in words);
- `figures`: report figures (speed-ups, energy split, timeline, roofline, tornado);
- `compare`: designs side by side (headline rows, deltas, CSV);
- `explain`: why a design is slower or costlier than a baseline, in words;
- `pages`: other pages' data (paper points, candidate rows, bundle zip, sqlite path);
- `paper`: the Paper page (rows filtered and counted, a panel per unit, table, CSV);
- `bundle`: the Export page (file table from the manifest, next commands, `dse export` line);
- `glossary`: the terms and their definitions (`term_help` for tooltips);
- `search`: the Design space and Studies pages' data (metric labels and units, formatting,
  results-table columns, the front's zoom and band, chart picks, applied constraints, CSV,
  a study's history and importances); used as `from dse.views import search`;
- `families`: the Design space page's families table (each family's best against the
  winner) and the statement when no speculative design beats the target alone; used as
  `from dse.views import families`.
"""

from dse.views.alternative import (
    Margin,
    joint_intervals,
    margin_rows,
    margin_sentence,
    margins,
)
from dse.views.choices import (
    AGGREGATION_LABELS,
    COLOCATE_LABELS,
    KV_DEFAULT,
    MEMORY_ABSENT,
    NO_COLOCATION,
    OFFLOAD_WIDGET_MAX,
    VERIFIER_LABELS,
    WORKFLOW_LABELS,
    RoleOptions,
    arrangement,
    build_knob_ranges,
    colocate_for_verifier,
    colocate_options,
    colocation_moves,
    flag_conflicts,
    kv_label,
    memory_overrides,
    memory_widget_values,
    role_options,
    runnable_flags,
    runs_precision,
    schedule_choices,
    shared_devices,
    supports,
)
from dse.views.compare import (
    HEADLINE,
    JOINT_METRICS,
    compare_table,
    deltas,
    joint_csv_columns,
    metric_rows,
    rows_csv,
    side_by_side,
)
from dse.views.explain import ROLE_LABELS, explain_vs_baseline
from dse.views.figures import (
    INTERVAL_PANELS,
    PROB_LABELS,
    TIMELINE_DEVICES,
    TIMELINE_KINDS,
    RoleRoofline,
    RooflinePoint,
    Timeline,
    energy_split,
    interval_rows,
    operating_context,
    problem_timeline,
    provenance_rows,
    rooflines,
    speedups,
    tornado,
)
from dse.views.pages import bundle_zip, candidate_rows, paper_points, sqlite_file
from dse.views.state import (
    BASELINES,
    DEFAULT_SCHEDULE,
    DEFAULT_SYSTEM,
    DEFAULT_WORKLOAD,
    MAX_PINS,
    MEMORY_OPTIONS,
    PIN_PARAM,
    TARGET_KEYS,
    DesignState,
    applicable,
    decode_pins,
    default_state,
    design_label,
    encode_pin,
    short_label,
    state_from_design,
    state_from_params,
    system_diff,
    unpinned_alternatives,
    url_state,
)

__all__ = [
    "AGGREGATION_LABELS",
    "BASELINES",
    "COLOCATE_LABELS",
    "DEFAULT_SCHEDULE",
    "DEFAULT_SYSTEM",
    "DEFAULT_WORKLOAD",
    "HEADLINE",
    "INTERVAL_PANELS",
    "JOINT_METRICS",
    "KV_DEFAULT",
    "MAX_PINS",
    "MEMORY_ABSENT",
    "MEMORY_OPTIONS",
    "NO_COLOCATION",
    "OFFLOAD_WIDGET_MAX",
    "PIN_PARAM",
    "PROB_LABELS",
    "ROLE_LABELS",
    "TARGET_KEYS",
    "TIMELINE_DEVICES",
    "TIMELINE_KINDS",
    "VERIFIER_LABELS",
    "WORKFLOW_LABELS",
    "DesignState",
    "Margin",
    "RoleOptions",
    "RoleRoofline",
    "RooflinePoint",
    "Timeline",
    "applicable",
    "arrangement",
    "build_knob_ranges",
    "bundle_zip",
    "candidate_rows",
    "colocate_for_verifier",
    "colocate_options",
    "colocation_moves",
    "compare_table",
    "decode_pins",
    "default_state",
    "deltas",
    "design_label",
    "encode_pin",
    "energy_split",
    "explain_vs_baseline",
    "flag_conflicts",
    "interval_rows",
    "joint_csv_columns",
    "joint_intervals",
    "kv_label",
    "margin_rows",
    "margin_sentence",
    "margins",
    "memory_overrides",
    "memory_widget_values",
    "metric_rows",
    "operating_context",
    "paper_points",
    "problem_timeline",
    "provenance_rows",
    "role_options",
    "rooflines",
    "rows_csv",
    "runnable_flags",
    "runs_precision",
    "schedule_choices",
    "shared_devices",
    "short_label",
    "side_by_side",
    "speedups",
    "sqlite_file",
    "state_from_design",
    "state_from_params",
    "supports",
    "system_diff",
    "tornado",
    "unpinned_alternatives",
    "url_state",
]
