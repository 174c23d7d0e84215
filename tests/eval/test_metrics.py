"""Metrics against a reference implementation from PyPI (ir-measures over pytrec_eval), plus their laws."""

from __future__ import annotations

import ir_measures
import pytest
from hypothesis import given
from hypothesis import strategies as st
from ir_measures import RR, R, nDCG

from eval.metrics import mrr_at_k, ndcg_at_k, recall_at_k, write_trec_run

QRELS = {
    "q1": {"d1": 2, "d4": 1},
    "q2": {"d9": 1},
    "q3": {"d2": 1, "d3": 1, "d5": 3},
}
RUNS = {
    "q1": ["d3", "d1", "d2", "d4", "d7"],
    "q2": ["d1", "d2"],
    "q3": ["d5", "d6", "d3", "d8", "d2", "d9"],
}


def _reference(qrels, runs, measure):  # type: ignore[no-untyped-def]
    qrel_rows = [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    run_rows = [
        ir_measures.ScoredDoc(q, d, float(len(docs) - i)) for q, docs in runs.items() for i, d in enumerate(docs)
    ]
    return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrel_rows, run_rows)}


@pytest.mark.parametrize("k", [1, 3, 5, 10])
def test_against_ir_measures_on_hand_made_runs(k):
    ndcg = _reference(QRELS, RUNS, nDCG @ k)
    recall = _reference(QRELS, RUNS, R @ k)
    rr = _reference(QRELS, RUNS, RR @ k)
    for q in QRELS:
        assert ndcg_at_k(RUNS[q], QRELS[q], k) == pytest.approx(ndcg.get(q, 0.0), abs=1e-9)
        assert recall_at_k(RUNS[q], QRELS[q], k) == pytest.approx(recall.get(q, 0.0), abs=1e-9)
        assert mrr_at_k(RUNS[q], QRELS[q], k) == pytest.approx(rr.get(q, 0.0), abs=1e-9)


def test_hand_computed_ndcg():
    import math

    # q1 at 3: d1 (grade 2) at rank 2; ideal: 2 then 1.
    expected = (2 / math.log2(3)) / (2 / math.log2(2) + 1 / math.log2(3))
    assert ndcg_at_k(RUNS["q1"], QRELS["q1"], 3) == pytest.approx(expected)


rankings = st.lists(st.sampled_from([f"d{i}" for i in range(12)]), unique=True, max_size=12)
judgements = st.dictionaries(st.sampled_from([f"d{i}" for i in range(12)]), st.integers(1, 3), min_size=1)


@given(rankings, judgements, st.integers(1, 12), st.integers(1, 12))
def test_metrics_in_unit_range_and_recall_monotone(ranking, relevant, k1, k2):
    low, high = min(k1, k2), max(k1, k2)
    for metric in (ndcg_at_k, recall_at_k, mrr_at_k):
        assert 0.0 <= metric(ranking, relevant, low) <= 1.0
    assert recall_at_k(ranking, relevant, low) <= recall_at_k(ranking, relevant, high)
    assert mrr_at_k(ranking, relevant, low) <= mrr_at_k(ranking, relevant, high)


def test_trec_run_file(tmp_path):
    path = tmp_path / "run.trec"
    write_trec_run(path, {"q1": [("d1", 2.5), ("d2", 1.0)]}, "xmemo")
    assert path.read_text() == "q1 Q0 d1 1 2.500000 xmemo\nq1 Q0 d2 2 1.000000 xmemo\n"
    parsed = list(ir_measures.read_trec_run(str(path)))
    assert [(r.query_id, r.doc_id) for r in parsed] == [("q1", "d1"), ("q1", "d2")]
