"""The two encoders of the packaged model: ONNX Runtime (the default for new stores) and PyTorch.

The ONNX export must give the model's own vectors, a store embedded by one encoder must refuse the
other until `reindex`, an existing store keeps its encoder under `auto`, and no CLI command imports
torch once the export exists.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval import MemoryEngine, ModelMismatchError, RetrievalSettings, StoreError
from retrieval.encoding import (
    MAX_PADDING,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    exportable,
    length_groups,
    open_embedder,
)
from tests.support import ROOT

TEXTS = [
    "ok",
    "The deploy of PAY-2291 failed at 03:14 because the payments queue was full.",
    "Melanie signed up for a pottery class last weekend and loved shaping the clay. " * 20,  # truncated
    "用户喜欢在周末徒步，最近去了黄山。",
    "Remember: the staging database lives at db-staging-3.internal:5432, not the old host.",
]


@pytest.fixture(scope="module")
def model_path() -> str:
    return RetrievalSettings().embedding_model


@pytest.fixture(scope="module")
def torch_embedder(model_path: str) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(model_path)


def test_onnx_gives_the_models_vectors_alone_and_in_padded_batches(model_path, torch_embedder) -> None:  # type: ignore[no-untyped-def]
    onnx = open_embedder(RetrievalSettings(embedding_backend="onnx"))
    assert isinstance(onnx, OnnxEmbedder) and onnx.name == "onnx:all-MiniLM-L6-v2"
    expected = torch_embedder.embed(TEXTS)
    batch = onnx.embed(TEXTS)  # one padded batch, sorted by length inside
    singles = np.stack([onnx.embed_query(text) for text in TEXTS])
    assert batch.shape == (len(TEXTS), onnx.dimension) == expected.shape
    assert np.min(np.sum(batch * expected, axis=1)) > 0.9999
    assert np.min(np.sum(singles * expected, axis=1)) > 0.9999
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)


def test_a_batch_of_mixed_lengths_gives_each_text_its_lone_vector(model_path) -> None:  # type: ignore[no-untyped-def]
    """Short queries beside long notes go in runs of their own length; every vector is the text's own."""
    onnx = OnnxEmbedder(model_path, RetrievalSettings().models_path, threads=1)
    texts = [TEXTS[i % len(TEXTS)] + f" ({i})" * (i % 3) for i in range(23)]
    lone = np.stack([onnx.embed([text])[0] for text in texts])
    assert np.min(np.sum(onnx.embed(texts) * lone, axis=1)) > 0.99999


@given(st.lists(st.integers(min_value=1, max_value=300), max_size=200), st.integers(min_value=1, max_value=64))
def test_length_groups_cover_every_text_once_and_bound_the_padding(lengths: list[int], batch_size: int) -> None:
    groups = length_groups(lengths, batch_size)
    assert sorted(p for group in groups for p in group) == list(range(len(lengths)))
    for group in groups:
        sizes = [lengths[p] for p in group]
        assert 1 <= len(group) <= batch_size
        assert max(sizes) * len(group) <= (1 + MAX_PADDING) * sum(sizes) + 1e-9
    # a run ends only when it is full or the next text would break the bound
    for group, after in itertools.pairwise(groups):
        sizes = [lengths[p] for p in group] + [lengths[after[0]]]
        assert len(group) == batch_size or max(sizes) * len(sizes) > (1 + MAX_PADDING) * sum(sizes)


def test_serve_on_a_small_host_runs_one_thread_per_inference_and_search_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = RetrievalSettings()
    assert (plain.encoder_threads, plain.index_search_threads) == (None, None)  # other commands: the libraries' own
    assert (plain.serving(cpus=2).encoder_threads, plain.serving(cpus=2).index_search_threads) == (1, 1)
    assert (plain.serving(cpus=8).encoder_threads, plain.serving(cpus=8).index_search_threads) == (None, None)
    monkeypatch.setenv("XMEMO_ENCODER_THREADS", "3")
    monkeypatch.setenv("XMEMO_INDEX_SEARCH_THREADS", "4")
    told = RetrievalSettings().serving(cpus=2)
    assert (told.encoder_threads, told.index_search_threads, told.edge_search_threads) == (3, 4, 4)
    monkeypatch.setenv("XMEMO_ENCODER_THREADS", "0")
    with pytest.raises(ValueError):
        RetrievalSettings()


def test_int8_moves_the_vectors_but_keeps_their_neighbourhoods(torch_embedder) -> None:  # type: ignore[no-untyped-def]
    int8 = open_embedder(RetrievalSettings(embedding_backend="onnx-int8"))
    assert int8.name == "onnx-int8:all-MiniLM-L6-v2"
    got, expected = int8.embed(TEXTS), torch_embedder.embed(TEXTS)
    cosines = np.sum(got * expected, axis=1)
    assert float(np.min(cosines)) > 0.8 and float(np.max(cosines)) < 0.9999  # close, and not the same vectors
    # each text is still nearest to its own torch vector
    assert list(np.argmax(got @ expected.T, axis=1)) == list(range(len(TEXTS)))


def test_a_store_refuses_the_other_encoder_until_reindex(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with MemoryEngine(RetrievalSettings(data_dir=data_dir)) as engine:  # a new store: auto is ONNX
        assert engine.store.get_meta("embedding_model") == "onnx:all-MiniLM-L6-v2"
    with pytest.raises(ModelMismatchError, match="reindex"):
        MemoryEngine(RetrievalSettings(data_dir=data_dir, embedding_backend="torch"))
    with MemoryEngine(
        RetrievalSettings(data_dir=data_dir, embedding_backend="torch"), allow_model_change=True
    ) as engine:
        engine.reindex()
    with MemoryEngine(RetrievalSettings(data_dir=data_dir)) as engine:  # auto now keeps the store's torch
        assert engine.embedder.name == "sentence-transformers:all-MiniLM-L6-v2"


def test_auto_takes_torch_for_a_model_the_export_does_not_reproduce(tmp_path: Path, model_path: str) -> None:
    custom = tmp_path / "model-with-cls-pooling"
    shutil.copytree(model_path, custom)
    pooling = custom / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    config.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    pooling.write_text(json.dumps(config))
    assert exportable(model_path) and not exportable(str(custom))
    assert isinstance(open_embedder(RetrievalSettings(embedding_model=str(custom))), SentenceTransformerEmbedder)
    explicit = open_embedder(RetrievalSettings(embedding_model=str(custom), embedding_backend="onnx"))
    with pytest.raises(StoreError, match="XMEMO_EMBEDDING_BACKEND=torch"):
        explicit.embed(["anything"])


# Every command that a person runs day to day; none may import torch once the export exists.
_COMMANDS = [
    ["import", "{notes}"],
    ["remember", "--owner", "u1", "--path", "/notes", "the build cache lives on /mnt/cache"],
    ["recall-context", "--owner", "u1", "where is the build cache"],
    ["search", "--owner", "u1", "build cache"],
    ["export", "{out}"],
    ["reflect", "--owner", "u1", "--dry-run"],
    ["memories", "list", "--owner", "u1"],
    ["keys", "list"],
    ["reindex"],
]

_PROBE = """
import sys
from service.cli import cli
try:
    cli.main(args=sys.argv[1:], standalone_mode=False)
finally:
    loaded = any(name == "torch" or name.startswith("sentence_transformers") for name in sys.modules)
    print("TORCH_LOADED=" + str(loaded))
"""


def _run_commands(tmp_path: Path, commands: list[list[str]], backend: str) -> dict[str, bool]:
    """Run each command in a fresh process on one store; whether each imported torch."""
    notes = tmp_path / "notes.jsonl"
    notes.write_text(
        "".join(
            json.dumps({"owner_id": "u1", "path": "/n", "content": f"note {i} on caching"}) + "\n" for i in range(20)
        )
    )
    data_dir = tmp_path / "data"
    loaded = {}
    for command in commands:
        args = [part.format(notes=notes, out=tmp_path / "out.jsonl") for part in command]
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, "--data-dir", str(data_dir), *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,
            env={**os.environ, "XMEMO_EMBEDDING_BACKEND": backend},
        )
        assert done.returncode == 0, (command, done.stderr[-2000:])
        loaded[" ".join(command[:2])] = "TORCH_LOADED=True" in done.stdout
    return loaded


def test_no_command_imports_torch(tmp_path: Path, real_embedder) -> None:  # type: ignore[no-untyped-def]
    real_embedder.embed(["make sure the export exists before the commands run"])
    assert not any(_run_commands(tmp_path, _COMMANDS, "auto").values())


def test_on_a_torch_store_only_commands_that_embed_import_torch(tmp_path: Path) -> None:
    loaded = _run_commands(tmp_path, _COMMANDS, "torch")
    assert loaded.pop("import {notes}") and loaded.pop("remember --owner") and loaded.pop("recall-context --owner")
    assert loaded.pop("search --owner")
    assert loaded.pop("reindex") is False  # every vector is in the embedding cache
    assert not any(loaded.values()), loaded  # export, reflect --dry-run, memories list, keys list
