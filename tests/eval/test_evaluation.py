"""`xmemo eval` on the shared data: LoCoMo dev in full, a SciFact slice and a LongMemEval slice, through
the production path."""

from __future__ import annotations

import json
import subprocess
import sys

import ir_measures
import pytest
from ir_measures import R, nDCG

from eval.datasets import load_beir, load_locomo, load_longmemeval
from eval.longmemeval import question_scores
from retrieval.domain import is_blank
from tests.support import ROOT, SHARED_DATA

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not SHARED_DATA.exists(), reason=f"evaluation data not found at {SHARED_DATA}"),
]


def _xmemo_eval(*args: str, out=None) -> tuple[int, dict]:  # type: ignore[no-untyped-def]
    command = [
        sys.executable,
        "-c",
        "from service.cli import main; main()",
        "eval",
        "--json",
        "--shared-data",
        str(SHARED_DATA),
        *args,
    ]
    if out is not None:
        command += ["--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}


def test_loaders_keep_graded_and_multiple_judgements():
    scifact = load_beir(SHARED_DATA / "scifact")
    assert len(scifact.docs) == 5183 and len(scifact.queries) == 300
    assert sum(len(q.relevant) for q in scifact.queries) == 339
    locomo = load_locomo(SHARED_DATA / "locomo" / "locomo-dev.json")
    assert len(locomo.docs) == 2760
    first = locomo.docs[0]
    assert first.speaker == "Caroline" and first.occurred_at == "2023-05-08T13:56:00Z"
    assert not first.text.startswith("Caroline: ")
    assert {q.category for q in locomo.queries} == {1, 2, 3, 4, 5}
    assert any(len(q.relevant) > 1 for q in locomo.queries)


def test_locomo_dev_in_full_meets_its_floors(tmp_path):
    code, report = _xmemo_eval("--dataset", "locomo", "--k", "5,10", out=tmp_path)
    assert code == 0, report.get("checks")
    hybrid, bm25, dense = (report["strategies"][s] for s in ("hybrid", "bm25", "dense"))
    assert hybrid["recall@5"] >= 0.74 and hybrid["recall@10"] >= 0.80
    assert report["category_5"]["hybrid"]["recall@5"] >= 0.75  # adversarial questions, reported apart
    assert hybrid["recall@5"] >= max(bm25["recall@5"], dense["recall@5"])
    assert hybrid["recall@10"] >= max(bm25["recall@10"], dense["recall@10"])
    assert "category_5" in report and report["pack"]["max_tokens"] == 1500
    assert all(c["status"] == "OK" for c in report["checks"]) and report["checks"]
    assert {p.name for p in tmp_path.iterdir()} >= {"report.json", "report.md", "chart.png", "run.hybrid.trec"}
    # the scores agree with the reference implementation on the real run
    locomo = load_locomo(SHARED_DATA / "locomo" / "locomo-dev.json")
    qrels = [
        ir_measures.Qrel(q.id, d, g)
        for q in locomo.queries
        if q.category in {1, 2, 3, 4}
        for d, g in q.relevant.items()
    ]
    wanted = {q.id for q in locomo.queries if q.category in {1, 2, 3, 4} and q.relevant}
    run = [r for r in ir_measures.read_trec_run(str(tmp_path / "run.hybrid.trec")) if r.query_id in wanted]
    reference = ir_measures.calc_aggregate([R @ 10], qrels, run)
    assert reference[R @ 10] == pytest.approx(hybrid["recall@10"], abs=5e-4)


def test_scifact_slice_meets_its_floors(tmp_path):
    code, report = _xmemo_eval("--dataset", "scifact", "--slice", "100", "--k", "5,10", out=tmp_path)
    assert code == 0, report.get("checks")
    assert report["dataset"] == "scifact-slice100" and report["queries"] == 100
    hybrid = report["strategies"]["hybrid"]
    assert hybrid["ndcg@10"] >= max(report["strategies"]["bm25"]["ndcg@10"], report["strategies"]["dense"]["ndcg@10"])
    scifact = load_beir(SHARED_DATA / "scifact")
    qrels = [ir_measures.Qrel(q.id, d, g) for q in scifact.queries[:100] for d, g in q.relevant.items()]
    run = list(ir_measures.read_trec_run(str(tmp_path / "run.hybrid.trec")))
    assert ir_measures.calc_aggregate([nDCG @ 10], qrels, run)[nDCG @ 10] == pytest.approx(hybrid["ndcg@10"], abs=5e-4)


def test_bad_dataset_is_a_user_error():
    done = subprocess.run(
        [sys.executable, "-c", "from service.cli import main; main()", "eval", "--dataset", "/nonexistent"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "cannot load" in done.stderr


def test_alpha_override_is_the_production_ranking_at_the_production_weight():
    base_code, base = _xmemo_eval("--dataset", "scifact", "--slice", "100", "--strategy", "hybrid")
    code, same = _xmemo_eval("--dataset", "scifact", "--slice", "100", "--strategy", "hybrid", "--alpha", "0.7")
    _, other = _xmemo_eval("--dataset", "scifact", "--slice", "100", "--strategy", "hybrid", "--alpha", "0.2")
    assert base_code == 0 and code == 0
    assert same["strategies"]["hybrid"] == base["strategies"]["hybrid"]
    assert other["strategies"]["hybrid"] != base["strategies"]["hybrid"] and other["checks"] == []


@pytest.fixture(scope="module")
def lifecycle() -> dict:  # type: ignore[type-arg]
    _, report = _xmemo_eval("--dataset", "locomo", "--lifecycle")
    return report["lifecycle"]  # type: ignore[no-any-return]


def test_lifecycle_reflect_makes_recall_better_on_locomo_dev(lifecycle):
    """The bar: with reflect after every session, recall@5 is at least the baseline's, no pack holds the
    same words twice, reflect summarized and promoted, no archived memory took evidence with it, the pack
    holds all evidence about as often as without reflect, and what is promoted carries annotated facts."""
    base, reflected = lifecycle["baseline"], lifecycle["reflected"]
    assert base["queries"] == reflected["queries"] == 760
    assert reflected["recall@5"] >= base["recall@5"]
    assert base["duplicate_rate"] == reflected["duplicate_rate"] == 0.0
    assert lifecycle["reflect_totals"]["summarized"] > 0 and lifecycle["reflect_totals"]["promoted"] > 0
    assert lifecycle["reflect_quality"]["archived_evidence_not_carried"] == 0
    assert reflected["pack_coverage"] >= base["pack_coverage"] - 0.005
    promotions = lifecycle["reflect_quality"]["promotions"]
    assert promotions["precision"] >= 0.90  # what is promoted recurs
    assert sum(c["count"] for c in promotions["by_conversation"].values()) == promotions["count"]
    others = [c for c in lifecycle["checks"] if not c["check"].startswith("reflected pack_coverage")]
    assert all(c["status"] == "OK" for c in others) and len(others) > 4


@pytest.mark.xfail(
    strict=True,
    reason="the reflected pack holding all evidence 0.02 more often: reflect's summaries group the members "
    "a pack holds and never take a place of their own; counted by the lines shown, the reflected pack holds "
    "all evidence about as often as the baseline's, not 0.02 more: 0.8329 against 0.8316 at 1,500 tokens, "
    "0.7526 against 0.7513 at 600 (docs/evaluation.md)",
)
def test_lifecycle_reflect_makes_the_pack_better_on_locomo_dev(lifecycle):
    base, reflected, tight = lifecycle["baseline"], lifecycle["reflected"], lifecycle["tight"]
    assert reflected["pack_coverage"] >= base["pack_coverage"] + 0.02
    assert tight["reflected"]["pack_coverage"] >= tight["baseline"]["pack_coverage"] + 0.02


def test_lifecycle_needs_a_locomo_file():
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from service.cli import main; main()",
            "eval",
            "--dataset",
            "scifact",
            "--shared-data",
            str(SHARED_DATA),
            "--lifecycle",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "LoCoMo" in done.stderr


def test_the_documented_commands_run_from_anywhere(tmp_path):
    """`xmemo eval --dataset scifact --slice 100` failed with "not a BEIR directory" outside the
    project's parent: the data is found beside the project, wherever the command runs."""
    import os

    cache = ROOT / ".cache" / "xmemo" / "eval-embeddings.sqlite"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from service.cli import main; main()",
            "eval",
            "--dataset",
            "scifact",
            "--slice",
            "100",
            "--strategy",
            "bm25",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "XMEMO_EVAL_CACHE": str(cache)},
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["dataset"] == "scifact-slice100"


LONGMEMEVAL = SHARED_DATA / "longmemeval" / "longmemeval-s-dev.jsonl"


def test_the_longmemeval_loader_keeps_each_question_its_haystack():
    dataset = load_longmemeval(LONGMEMEVAL)
    assert len(dataset.queries) == 55  # 56 less the one abstention question
    assert not any(q.id.endswith("_abs") for q in dataset.queries)
    first = dataset.queries[0]
    assert first.kind == "knowledge-update" and first.as_of == "2023-12-18T04:17:00Z"
    assert first.sessions and all(s.startswith(f"{first.id}/") for s in first.sessions)
    turns = [d for d in dataset.docs if d.group == first.group]
    assert {d.speaker for d in turns} == {"user", "assistant"}
    assert set(first.relevant) <= {d.id for d in turns}
    assert {d.id.rsplit("/", 1)[0] for d in turns if d.id in first.relevant} <= set(first.sessions)


def test_the_longmemeval_loader_leaves_out_the_turns_the_service_refuses_as_blank():
    """Four assistant turns of the dev set are a lone zero-width space, which the service refuses as a
    memory (issue 47 item 13); before, the whole evaluation stopped at the first of them."""
    dataset = load_longmemeval(LONGMEMEVAL)
    assert not [d.id for d in dataset.docs if is_blank(d.text)]
    assert len(dataset.docs) == 26620


def test_longmemeval_metrics_follow_the_benchmark():
    dataset = load_longmemeval(LONGMEMEVAL)
    query = next(q for q in dataset.queries if len(q.sessions) > 1)
    evidence = sorted(query.relevant)
    other = [d.id for d in dataset.docs if d.group == query.group and d.id.rsplit("/", 1)[0] not in query.sessions]
    perfect = question_scores(evidence + other[:20], query)
    assert perfect["turn_recall_all@10"] == perfect["session_recall_all@5"] == perfect["session_ndcg_any@5"] == 1.0
    one = [evidence[0], *other[:20]]
    partial = question_scores(one, query)
    assert partial["session_recall_any@5"] == partial["turn_recall_any@5"] == 1.0
    assert partial["session_recall_all@5"] == 0.0 and 0.0 < partial["session_ndcg_any@5"] < 1.0
    assert question_scores(other[:20], query)["session_recall_any@5"] == 0.0


def test_a_longmemeval_slice_meets_its_floors(tmp_path):
    """The CI slice (the first 6 questions, every haystack whole: about 3,000 turns to encode); the full
    dev set is in docs/evaluation.md."""
    code, report = _xmemo_eval("--dataset", str(LONGMEMEVAL), "--slice", "6", "--strategy", "hybrid,bm25", out=tmp_path)
    assert code == 0, report.get("checks")
    assert report["dataset"] == "longmemeval-s-dev-slice6" and report["queries"] == 6
    assert all(c["status"] == "OK" for c in report["checks"]) and report["checks"]
    assert set(report["by_type"]["hybrid"]) >= {"knowledge-update", "multi-session"}
    assert report["pack"]["max_items"] == 10 and report["pack"]["max_tokens"] == 4000
    assert {p.name for p in tmp_path.iterdir()} >= {"report.json", "report.md", "chart.png", "run.hybrid.trec"}
