"""The model on ONNX Runtime: exported once from its local directory, then run without torch.

Loading sentence-transformers means importing torch and transformers, which took 10-15 s of every
CLI command that embeds and of every server start on this 2-core machine; one query took 17.5 ms on
torch against 3.2 ms on ONNX Runtime. The export (transformer + mean pooling + L2 norm, the module
`torch_encoder.mean_pooled` builds) needs torch once; it is checked against `encode` before it is kept,
and kept under `model_cache_dir`, keyed by the model directory's files. Later processes load the
`.onnx` file and the model's own `tokenizer.json`, and never import torch.

fp32 gives the model's vectors (cosine to torch >= 0.9999 on the check texts, or the export is
refused). int8 (dynamic quantisation) is faster and moves the vectors; docs/evaluation.md has what
it costs in retrieval quality.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..domain import StoreError, timed
from .base import declared_dimension, model_label
from .batching import BatchingEmbedder
from .torch_encoder import load_sentence_transformer, mean_pooled

__all__ = ["MAX_PADDING", "OnnxEmbedder", "exportable", "exported_model", "length_groups"]

log = logging.getLogger("xmemo.onnx")

# Texts the export is checked on: short and long, ASCII and not, so that padding, truncation and
# the tokenizer's normalisation are all exercised.
_CHECK_TEXTS = (
    "hi",
    "The deploy of PAY-2291 failed at 03:14 because the payments queue was full.",
    "Caroline went to the LGBTQ support group on 7 May 2023 and felt accepted there. " * 12,
    "Der Kunde möchte die Rechnung bis Freitag; 顧客は金曜日までに請求書を希望しています。",
)
_MIN_COSINE = 0.9999


def exportable(model_path: str) -> bool:
    """Whether the directory holds a plain transformer + mean pooling (+ normalize) stack: what the
    export reproduces. Read from the model's JSON files, without loading it."""
    root = Path(model_path)
    try:
        modules = json.loads((root / "modules.json").read_text())
        kinds = [module["type"].rsplit(".", 1)[-1] for module in modules]
        if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
            return False
        pooling = json.loads((root / modules[1]["path"] / "config.json").read_text())
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return False
    modes = [key for key, on in pooling.items() if key.startswith("pooling_mode") and on is True]
    mean = pooling.get("pooling_mode") == "mean" or modes == ["pooling_mode_mean_tokens"]
    return bool(mean) and (root / "tokenizer.json").is_file()


class OnnxEmbedder(BatchingEmbedder):
    """An Embedder running the exported model on ONNX Runtime; concurrent callers share one batch."""

    def __init__(
        self,
        model_path: str,
        cache_dir: Path,
        batch_size: int = 64,
        quantized: bool = False,
        threads: int | None = None,
    ) -> None:
        super().__init__(f"{'onnx-int8' if quantized else 'onnx'}:{model_label(model_path)}")
        self.model_path = model_path
        self.cache_dir = cache_dir
        self.batch_size = batch_size
        self.quantized = quantized
        self.threads = threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @functools.cached_property
    def dimension(self) -> int:
        """What the model directory declares (an exportable model always declares it)."""
        dimension = declared_dimension(self.model_path)
        if dimension is None:
            raise StoreError(f"{self.model_path} does not declare its vector size; set XMEMO_EMBEDDING_BACKEND=torch")
        return dimension

    # -- running -------------------------------------------------------------------------------

    def _load(self) -> tuple[Any, Any]:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    with timed(f"load {self.name}"):
                        self._tokenizer = _tokenizer(self.model_path)
                        self._session = _session(
                            exported_model(self.model_path, self.cache_dir, self.quantized), self.threads
                        )
        return self._session, self._tokenizer

    def _infer(self, texts: list[str], _queries: bool, _single: bool) -> np.ndarray:
        """Runs of similar token counts, so that padding costs little; results in the callers' order."""
        token_ids = self.tokenized(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for chosen in length_groups([len(ids) for ids in token_ids], self.batch_size):
            out[chosen] = self.run_tokens([token_ids[i] for i in chosen])
        return out

    def tokenized(self, texts: Sequence[str]) -> list[list[int]]:
        """The model's token ids of each text, truncated to its sequence length, unpadded."""
        return [encoding.ids for encoding in self._load()[1].encode_batch(list(texts))]

    def run_tokens(self, token_ids: Sequence[Sequence[int]]) -> np.ndarray:
        """One forward pass over tokenised texts, padded to the longest, on the calling thread (the
        batching benchmark times batch shapes with it; callers of the model go through `embed`)."""
        return _run(self._load()[0], token_ids)


# A run costs about the same per token, padding included (measured here on one thread: 150-215
# microseconds a token at any batch size), so a run may pad its texts by at most this share of
# their own tokens. Under the load mix a batch held 11-token queries beside 40-token notes; padded
# to the longest, it spent half of its time on padding.
MAX_PADDING = 0.25


def length_groups(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Positions of `lengths` in runs of at most `batch_size`, shortest first, each run padded to
    its longest by at most MAX_PADDING of its tokens."""
    groups: list[list[int]] = []
    group: list[int] = []
    tokens = 0
    for position in sorted(range(len(lengths)), key=lengths.__getitem__):
        length = lengths[position]
        if group and (len(group) == batch_size or length * (len(group) + 1) > (1 + MAX_PADDING) * (tokens + length)):
            groups.append(group)
            group, tokens = [], 0
        group.append(position)
        tokens += length
    if group:
        groups.append(group)
    return groups


def _run(session: Any, token_ids: Sequence[Sequence[int]]) -> np.ndarray:
    """One forward pass over texts already tokenised, padded here to the longest (the pooling
    weighs tokens by the attention mask, so padding does not move a vector)."""
    width = max(1, *(len(ids) for ids in token_ids))
    ids = np.zeros((len(token_ids), width), dtype=np.int64)
    mask = np.zeros((len(token_ids), width), dtype=np.int64)
    for row, text_ids in enumerate(token_ids):
        ids[row, : len(text_ids)] = text_ids
        mask[row, : len(text_ids)] = 1
    return np.asarray(session.run(None, {"input_ids": ids, "attention_mask": mask})[0], dtype=np.float32)


def _tokenizer(model_path: str) -> Any:
    from tokenizers import Tokenizer

    root = Path(model_path)
    tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
    try:
        max_length = int(json.loads((root / "sentence_bert_config.json").read_text())["max_seq_length"])
    except (OSError, ValueError, KeyError):
        max_length = 256
    tokenizer.enable_truncation(max_length)
    tokenizer.no_padding()  # _run pads each run to its own longest text
    return tokenizer


def _session(path: Path, threads: int | None = None) -> Any:
    """A session whose runs use `threads` threads (None: ONNX Runtime's default, one per core)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only
    # Idle pool threads spin by default, waiting for the next call: on a busy 2-core server that
    # doubled the CPU time per text (measured 23.4 against 10.8 ms, batches of 8, the other core loaded).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads is not None:
        options.intra_op_num_threads = threads
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


# -- export ------------------------------------------------------------------------------------


def _fingerprint(model_path: str) -> str:
    """Names, sizes and the first and last 64 KiB of the model directory's files: a changed model gets a
    new export, and any install of the same model (another machine, another image stage, where the files'
    times differ) finds the one already made."""
    digest = hashlib.sha256()
    root = Path(model_path).resolve()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        size = path.stat().st_size
        digest.update(f"{path.relative_to(root)}\0{size}\0".encode())
        with path.open("rb") as handle:
            digest.update(handle.read(_EDGE_BYTES))
            if size > 2 * _EDGE_BYTES:
                handle.seek(size - _EDGE_BYTES)
                digest.update(handle.read(_EDGE_BYTES))
    return digest.hexdigest()[:16]


_EDGE_BYTES = 64 * 1024


def exported_model(model_path: str, cache_dir: Path, quantized: bool = False) -> Path:
    """The `.onnx` file of this model, exported (and checked) on first use; needs torch only then."""
    if not exportable(model_path):
        raise StoreError(
            f"{model_path} is not a transformer + mean pooling model, which the ONNX encoder reproduces; "
            "set XMEMO_EMBEDDING_BACKEND=torch for it"
        )
    folder = cache_dir / f"{model_label(model_path)}-{_fingerprint(model_path)}"
    target = folder / ("model-int8.onnx" if quantized else "model.onnx")
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    plain = folder / "model.onnx"
    if not plain.is_file():
        if not _can_export():
            raise StoreError(
                f"no ONNX export of {model_path} in {cache_dir}, and torch is not installed to make one: "
                "install the export extra once (pip install 'xmemo-server[export]'), or point "
                "XMEMO_MODEL_CACHE_DIR at a directory that holds the export"
            )
        _export(model_path, plain)
    if quantized:
        _quantize(plain, target)
    return target


def _can_export() -> bool:
    """Whether torch, sentence-transformers and onnx are installed (the `export` extra)."""
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in ("torch", "sentence_transformers", "onnx"))


def _export(model_path: str, target: Path) -> None:
    """Export with torch, check the result against `encode`, and only then move it into place."""
    import torch

    log.info("exporting %s to ONNX (once per model): %s", model_path, target)
    model = load_sentence_transformer(model_path)
    module = mean_pooled(model)
    example = model.tokenizer(list(_CHECK_TEXTS[:2]), return_tensors="pt", padding=True)
    descriptor, scratch = tempfile.mkstemp(suffix=".onnx", dir=target.parent)
    os.close(descriptor)
    try:
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter warns about traced shape arithmetic
            torch.onnx.export(
                module,
                (example["input_ids"], example["attention_mask"]),
                scratch,
                input_names=["input_ids", "attention_mask"],
                output_names=["embedding"],
                dynamic_axes={
                    "input_ids": {0: "batch", 1: "tokens"},
                    "attention_mask": {0: "batch", 1: "tokens"},
                    "embedding": {0: "batch"},
                },
                opset_version=17,
                dynamo=False,
            )
        expected = model.encode(list(_CHECK_TEXTS), normalize_embeddings=True, show_progress_bar=False)
        tokenizer = _tokenizer(model_path)
        exported = _session(Path(scratch))
        token_ids = [e.ids for e in tokenizer.encode_batch(list(_CHECK_TEXTS))]
        alone = np.concatenate([_run(exported, [ids]) for ids in token_ids])
        padded = _run(exported, token_ids)  # one run, each text padded to the longest
        cosine = float(min(np.min(np.sum(alone * expected, axis=1)), np.min(np.sum(padded * expected, axis=1))))
        if cosine < _MIN_COSINE:
            raise StoreError(f"the ONNX export of {model_path} disagrees with the model (cosine {cosine:.6f})")
        os.replace(scratch, target)
    finally:
        Path(scratch).unlink(missing_ok=True)


def _quantize(plain: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    descriptor, scratch = tempfile.mkstemp(suffix=".onnx", dir=target.parent)
    os.close(descriptor)
    try:
        root = logging.getLogger()
        was_disabled, root.disabled = root.disabled, True  # it logs pre-processing advice at WARNING
        try:
            quantize_dynamic(str(plain), scratch, weight_type=QuantType.QInt8)
        finally:
            root.disabled = was_disabled
        os.replace(scratch, target)
    finally:
        Path(scratch).unlink(missing_ok=True)
