"""The benchmark commands run end to end and report what they claim (their figures are not judged here:
speed is measured by running them, never by timed tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from eval.bench import SampledDocuments
from tests.support import ROOT


def test_sampled_documents_are_distinct_unit_vectors_near_their_sample_and_queries_are_real(real_embedder) -> None:  # type: ignore[no-untyped-def]
    sample = real_embedder.embed(["the deploy failed", "the invoice was paid", "the cache filled up"])
    sampled = SampledDocuments(real_embedder, sample)
    texts = [f"note {i}" for i in range(200)]
    vectors = sampled.embed(texts)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert len({v.tobytes() for v in vectors}) == len(texts)  # every text its own vector
    assert np.array_equal(sampled.embed(texts[:5]), vectors[:5])  # and the same one each time
    assert float(np.min(np.max(vectors @ sample.T, axis=1))) > 0.9  # each near one real embedding
    query = "why did the deploy fail"
    assert np.allclose(sampled.embed_query(query), real_embedder.embed_query(query), atol=1e-5)


def test_bench_reports_each_encoder_with_ratios_against_torch(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from service.cli import main; main()",
            "bench",
            "--memories",
            "60",
            "--queries",
            "5",
            "--backend",
            "edge",
            "--encoder",
            "onnx,torch",
            "--synthetic-vectors",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
        env={**os.environ, "XMEMO_EVAL_CACHE": str(tmp_path / "cache.sqlite")},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    onnx, torch = report["backends"]["edge/onnx"], report["backends"]["edge/torch"]
    assert onnx["encoder"] == "onnx:all-MiniLM-L6-v2" and torch["encoder"] == "sentence-transformers:all-MiniLM-L6-v2"
    assert onnx["vectors"].startswith("synthesised from 4096 real embeddings")
    assert onnx["memories"] == 60 and onnx["disk_mb"] > 0 and onnx["recall_context_ms"]["p50"] > 0
    ratios = report["ratios"]["edge: onnx over torch"]
    assert set(ratios) == {
        "recall_context_p50",
        "one_query_embedding_p50",
        "raw_encoder_per_s",
        "ingest_per_s",
        "peak_rss_mb",
    }


def test_load_loses_no_acknowledged_write_and_reports_the_servers_cpu() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "eval.load", "--clients", "4", "--seconds", "4", "--write-share", "0.4", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    report = json.loads(done.stdout)
    assert report["errors"] == 0 and report["writes_not_readable"] == 0
    assert report["acknowledged_writes"] > 0 and report["operations"]["recall_context"]["count"] > 0
    assert report["server_cpu_ms_per_request"] > 0
    assert report["client_cpu_ms_per_request"] >= 0  # the clients' own, beside the server's


def test_the_edge_settings_study_compares_each_setting_with_edges_default_and_refuses_unknown_ones() -> None:
    run = [sys.executable, "-m", "eval.edge_settings", "--points", "500", "--queries", "5", "--json", "--settings"]
    done = subprocess.run(
        [*run, "default,float16,hnsw-m8,production"], capture_output=True, text=True, cwd=ROOT, timeout=900
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    rows = report["settings"]
    assert [row["setting"] for row in rows] == ["default", "float16", "hnsw-m8", "production"]
    assert report["vectors"].startswith("synthesised from 4096 real embeddings")
    # 500 points is under the full-scan threshold: every search is exact, so each recall is 1, also at
    # production's candidate depth (50), whose list holds the exact top 10
    assert all(row[k] == 1.0 for row in rows for k in ("recall_at_10", "recall_at_50", "top10_in_50"))
    assert set(rows[0]["vs_default"]) == {"build", "search_p50", "shard_rss", "disk"}
    assert all(ratio in (1.0, None) for ratio in rows[0]["vs_default"].values())  # None: a base that measured 0
    assert all(0.0 <= row["recall_at_10"] <= 1.0 and row["disk_mb"] > 0 and row["search_ms"]["p50"] > 0 for row in rows)
    refused = subprocess.run([*run, "default,hnsw-m999"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert refused.returncode != 0 and "unknown setting(s): hnsw-m999" in refused.stderr


def test_the_growth_run_feeds_a_real_server_forgets_reindexes_and_reports_each_rebuild() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "eval.edge_growth",
            "--memories",
            "300",
            "--checkpoints",
            "150",
            "--queries",
            "5",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert [step["memories"] for step in report["steps"]] == [150, 300]
    assert all(step["recall"]["p50_ms"] > 0 for step in report["steps"]) and report["reindexed_recall"]["p50_ms"] > 0
    assert report["settled_recall"]["p50_ms"] > 0 and report["idle_wait_s"] >= 3
    assert report["probe"]["probes"] > 0 and report["probe"]["failures"] == 0
    # 300 memories are too few for a rebuild of their own: the hard forget asked for this one
    assert len(report["rebuilds"]) == 1 and report["rebuilds"][0]["points"] == 299
    assert report["forget_off_disk_s"] >= report["hard_forget_s"] > 0
    refused = subprocess.run(
        [sys.executable, "-m", "eval.edge_growth", "--memories", "100", "--checkpoints", "300"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert refused.returncode == 2 and "increase" in refused.stderr
