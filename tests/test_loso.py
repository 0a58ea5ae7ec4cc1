"""Leave-one-source-out cross-validation of the GPU serving profiles: what a source document
is, which points get a prediction, and the interval widths built from them (hand-made
residuals)."""

from __future__ import annotations

import math
from collections import defaultdict

import pytest

from dse.validation import gpu_cv
from dse.validation.gpu_cv import CvPoint
from dse.validation.measurements import document_of


@pytest.mark.parametrize("source, device, want", [
    ("QwenLM/Qwen2.5 docs/source/benchmark/speed_benchmark.rst @ a912d23", "", "QwenLM/Qwen2.5"),
    ("mlc-ai/llm-perf-bench README.md @ 3f5e", "rtx-4090", "mlc-ai/llm-perf-bench"),
    ('Qiao, Chen et al., "TeLLMe", arXiv 2504.16266 (v2), abstract', "", "arXiv:2504.16266"),
    ("dse/data/measured.toml", "a100-80gb-sxm", "QwenLM/Qwen2.5"),  # the brief's Qwen copy
    ("dse/data/measured.toml", "jetson-orin-nano-8gb", "HeteroReason paper"),
])
def test_a_source_document_is_its_repository_or_paper(source, device, want):
    assert document_of(source, device) == want


def test_every_profile_with_several_sources_is_predicted_from_the_others():
    cv = gpu_cv.load()
    docs: dict[str, set[str]] = defaultdict(set)
    for c in cv:
        docs[c.profile].add(c.document)
    assert all(c.document for c in cv)
    for c in cv:
        if len(docs[c.profile]) == 1:  # nothing else to predict it from
            assert c.loso_s is None, c.id
    # a profile with several sources predicts at least its smaller sources from the larger
    # (the larger alone, e.g. the Qwen benchmark's 141 vLLM points, may leave too few to fit)
    for prof, ds in docs.items():
        if len(ds) > 1:
            assert any(c.loso_s is not None for c in cv if c.profile == prof), prof


def _pt(i: int, family: str, doc: str, rel: float, timed: str = "decode",
        loo: float = 0.0, tp: int = 1, gpu: str = "gpu", generation: str = "ampere") -> CvPoint:
    return CvPoint(f"p{i}", family, family, gpu, generation, "m", "bf16", timed, 0, 1.0, 1.0,
                   1.0 + loo, doc, 1.0 + rel, tp)


def test_widths_use_the_familys_own_sources_then_every_familys_then_leave_one_out():
    # family a: 10 points over two documents with |log error| log(1.01) ... log(1.10)
    a = [_pt(i, "a", f"d{i % 2}", 0.01 * (i + 1)) for i in range(10)]
    b = [_pt(10 + i, "b", "e", 0.5) for i in range(2)]
    probe_a = _pt(99, "a", "new", 0.0)
    # a new document of a: a's ten residuals, the ceil(11 x 0.9) = 10th smallest
    assert gpu_cv.loso_half_width(a + b, probe_a) == pytest.approx(math.log(1.10))
    # b has 2 of its own (< 9): every family's 12 residuals, the 12th smallest (ceil(13 x 0.9))
    probe_b = _pt(98, "b", "new", 0.0)
    assert gpu_cv.loso_half_width(a + b, probe_b) == pytest.approx(math.log(1.5))
    # a point of d1 leaves d1 out: a's five d0 points (1, 3, 5, 7, 9%) and nine exact ones,
    # 14 residuals, the ceil(15 x 0.9) = 14th smallest is the largest, log(1.09)
    pre = [_pt(20 + i, "a", "d0", 0.0) for i in range(9)]
    assert gpu_cv.loso_half_width(a + pre, a[1]) == pytest.approx(math.log(1.09))
    # a prefill point of a: no leave-one-source-out prefill residual anywhere, so its
    # family's leave-one-out residuals (here 9 of them, 2% ... 18%): the largest, log(1.18)
    pre = [_pt(30 + i, "a", "d0", 0.0, "prefill", loo=0.02 * (i + 1)) for i in range(9)]
    pre = [CvPoint(**{**p.__dict__, "loso_s": None}) for p in pre]
    probe = _pt(97, "a", "new", 0.0, "prefill")
    assert gpu_cv.loso_half_width(a + pre, probe) == pytest.approx(math.log(1.18))


def test_a_one_gpu_width_ignores_tensor_parallel_residuals():
    # nine one-GPU points 1-9% and nine TP-4 points 3x off: a one-GPU point gets 9%, a TP
    # point the TP residuals' log(3)
    one = [_pt(i, "a", f"d{i % 3}", 0.01 * (i + 1)) for i in range(9)]
    tp4 = [_pt(10 + i, "a", f"d{i % 3}", 2.0, tp=4) for i in range(9)]
    assert gpu_cv.loso_half_width(one + tp4, _pt(99, "a", "new", 0.0)) == \
        pytest.approx(math.log(1.09))
    assert gpu_cv.loso_half_width(one + tp4, _pt(98, "a", "new", 0.0, tp=4)) == \
        pytest.approx(math.log(3.0))


def test_an_unseen_gpu_takes_at_least_the_unseen_gpu_residuals_width():
    # family a: nine points 1-9% on one GPU measured by three documents; family b: nine
    # points 30% off, each on a GPU only its own document measured (their predictions were
    # for an unseen GPU). A hopper point of a (a never measured hopper) takes b's log(1.3);
    # an ampere point keeps a's own 9%.
    a = [_pt(i, "a", f"d{i % 3}", 0.01 * (i + 1)) for i in range(9)]
    b = [_pt(10 + i, "b", f"e{i}", 0.3, gpu=f"g{i}") for i in range(9)]
    hopper = _pt(99, "a", "new", 0.0, gpu="h100", generation="hopper")
    assert gpu_cv.loso_half_width(a + b, hopper) == pytest.approx(math.log(1.3))
    assert gpu_cv.loso_half_width(a + b, _pt(98, "a", "new", 0.0)) == \
        pytest.approx(math.log(1.09))
    # fewer than nine unseen-GPU residuals: borrowed, widened by the extrapolation factor
    assert gpu_cv.loso_half_width(a + b[:5], hopper) == pytest.approx(2 * math.log(1.09))


def test_the_summary_counts_documents_and_coverage():
    a = [_pt(i, "a", f"d{i % 3}", 0.01 * (i + 1)) for i in range(12)]
    rows = {r.family: r for r in gpu_cv.loso_summary(a)}
    r = rows["a"]
    assert (r.points, r.documents, r.loso_points) == (12, 3, 12)
    assert r.median_abs_error == pytest.approx(0.065)  # the median of 1%...12%
    assert 0.0 <= (r.coverage or 0.0) <= 1.0
    assert rows["all GPU points"].points == 12


def test_fpga_designs_are_predicted_by_the_default_engine_as_a_new_source(cat):
    from dse.validation import fpga

    rows = {name: (n, med, worst) for name, n, med, worst in fpga.default_engine_rows(cat)}
    assert "flexllm" not in rows and {"streamtensor", "hls-stream", "dfx"} <= set(rows)
    assert all(n >= 1 and 0.0 <= med <= worst for n, med, worst in rows.values())
    # the HLS ports, even at their own ports and clocks, run at another share of their bound
    # than FlexLLM's (0.27): the default engine misses them by more than half
    assert rows["hls-stream"][1] > 0.5


def test_each_fold_leaves_its_whole_source_out(cat, monkeypatch):
    """leave_one_source_out fits each fold without every point of one source document (and
    with every other point), and predicts exactly that document's points from it."""
    from dse.validation import gpu_fit
    from dse.validation.measurements import load_gpu_measurements

    pts, _ = load_gpu_measurements(cat.names("model"), cat.names("gpu"),
                                   cat.names("gpu-serving"))
    spec = gpu_fit.FITS["vllm-eager"]
    mine = gpu_fit.points_for(spec, pts)
    docs = {m.document for m in mine}
    assert len(docs) >= 3
    fits: list[set[str]] = []

    def fake_fit(c, s, train, *, base=None):
        fits.append({m.id for m in train})
        return gpu_fit.Fit(s.profile, {}, {}, "ampere", len(train), 0.0, 0.0)

    monkeypatch.setattr(gpu_fit, "fit_profile", fake_fit)
    f = gpu_fit.Fit(spec.profile, {}, {}, "ampere", len(mine), 0.0, 0.0)
    pf = gpu_fit.ProfileFit(spec, cat.serving(spec.profile), {}, f, cat.serving(spec.profile),
                            mine)
    out = gpu_fit.leave_one_source_out(cat, pf)
    assert len(fits) == len(docs)
    for train, doc in zip(fits, sorted(docs), strict=True):
        left = {m.id for m in mine if m.document == doc}
        assert train == {m.id for m in mine} - left, doc
        assert all(out[i] is not None for i in left)
