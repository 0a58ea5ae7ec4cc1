"""Caps that follow from the model, in one place (docs/cli.md lists them). Every input a knob
can come from (catalog, system and design files, `--set`, the Python API, space files, command
flags, trace records) is checked against these before it reaches a model, so that every result
is finite and every evaluation allocates bounded memory. No imports: the command-line parser
uses them."""

# Integers the loader accepts: 2**53, the last a float64 represents exactly.
MAX_INT = 2**53
# A generation budget beyond any model's positions (the longest in the catalog is 131072);
# the bound keeps the step arrays of the evaluators allocatable. A step's token count (in a
# trace) and a context or prompt (`dse roofline`) are bounded by it too.
MAX_CONTEXT_TOKENS = 10_000_000
# Coefficients of variation of step counts and lengths: past ~100 the lognormal's sigma
# overflows the quadrature (cv 1e308 gave NaN metrics); real workloads sit below 2.
MAX_CV = 100.0
# A target's in-chain rewrite error relative to its solo-accuracy form (dse.model.workflow): the
# capped rates saturate at 1 long before (the fitted factors are 0.5-1.7).
MAX_IN_CHAIN_ERROR_FACTOR = 100.0
# Backtracking budget and anchor window: the closed form propagates mass over (backtracks used x
# step position) and the window's anchor distances, so both size its arrays. The paper runs one
# backtrack within one step; a budget of 64 rewinds is far past where accuracy stops moving (each
# backtrack needs a failed rewrite), and an anchor 64 steps back is beyond every workload's mean
# step count (8-13 steps).
MAX_BACKTRACKS = 64
MAX_BACKTRACK_WINDOW = 64
# Largest synthetic trace the simulator draws: its arrays are [problems, attempts] (about ten
# fields, up to a few hundred attempts), so 10**5 problems stay within a few GB of memory.
MAX_PROBLEMS = 100_000
# Knob settings (flags x accept thresholds x backtracking settings) per hardware choice of a
# space: the sweep holds one float64 array of that size per metric (8) and per intermediate of
# the mean-value model, so 10**6 settings (28x the default space's 35,364) take ~0.5 GB.
MAX_KNOBS_PER_HARDWARE = 1_000_000
# Random seeds (the simulator's synthetic traces, Optuna's samplers): numpy's legacy RandomState,
# which Optuna's samplers seed, takes 0..2**32 - 1; one range for every seed.
MAX_SEED = 2**32 - 1
# Input files read by the strict loader (catalog members, system and design files, space files,
# a Hugging Face config.json): the largest shipped one is a few kB; 4 MiB leaves room for any
# hand-written file and keeps a mistaken path (a log, an image) from being read whole.
MAX_SPEC_FILE_BYTES = 4 * 2**20
# A JSONL trace (`simulate --trace`): about 150 bytes per record, so the largest synthetic trace
# (MAX_PROBLEMS problems of a few hundred attempts) stays below 512 MiB.
MAX_TRACE_FILE_BYTES = 512 * 2**20
# Designs `dse compare` puts side by side: each costs its report's intervals and a joint interval
# of its difference from the first (about 60 closed-form evaluations), and a wider table is no
# longer read side by side.
MAX_COMPARE_DESIGNS = 16
# Paths given to the Python API: the usual PATH_MAX of Linux.
MAX_PATH_CHARS = 4096
# A SQLite study database's absolute path, in bytes: SQLite's unix VFS builds full path names
# in MAX_PATHNAME (512) bytes (os_unix.c), and its rollback journal is the database's name plus
# "-journal" (8 bytes), so 504 is the longest database path it can write to (measured: SQLite
# 3.40 opens 504 bytes and fails at 505 with "unable to open database file", which says not why).
MAX_SQLITE_PATH_BYTES = 512 - len("-journal")
# Samples of a width design (best-of-N, voting; candidates per step of a step or beam search):
# the width model's fitted rows reach 64 samples in the sources it may fit (2501.07301's
# best-of-64 included), and N sequences decode as one batch of N on the policy's device.
MAX_SAMPLES = 64
# GPUs one model may be split over (tensor parallel), for the PRM and the target alike.
MAX_TP = 64

# Parse-time ceilings of the FPGA build flags of `dse roofline` (each board's own range is then
# checked: a V80 holds 10,848 DSP58 x 3 INT8 MACs = 32,544 lanes; HBM boards expose at most 64
# pseudo-channels), so a typo is refused before any arithmetic.
MAX_MAC_LANES = 1_000_000
MAX_CHANNELS = 1024
# The scheduler's cap on running sequences (vLLM's --max-num-seqs): dse serve, a design file's
# [serving] table and a search's --max-num-seqs; 65,536 sequences is far past any GPU's KV cache.
MAX_NUM_SEQS = 65_536

# Requests per second of a load (dse serve --rate, a search's --rate, a workload's [load]): a
# million a second is past any rack the catalog can build; beyond it the queueing arithmetic
# overflows float64.
MAX_RATE_PER_S = 1e6
# ... and at least one request in about twelve days: below it a board's idle draw over the few
# tokens served overflows float64 as J and $ per token (--rate 1e-310 divided by zero).
MIN_RATE_PER_S = 1e-6
