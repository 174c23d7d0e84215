"""Dense embeddings: an Embedder port, the sentence-transformers implementation, and its cache."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import queue
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .embedding_cache import EmbeddingCache
from .errors import StoreError
from .records import Memory
from .settings import RetrievalSettings
from .timing import timed

__all__ = [
    "CachedEmbedder",
    "EmbeddingCache",
    "Embedder",
    "SentenceTransformerEmbedder",
    "completed",
    "declared_dimension",
    "memory_digest",
    "model_label",
    "InferenceBatcher",
    "load_sentence_transformer",
    "mean_pooled",
    "open_embedder",
    "tenant_digest",
    "tenant_of",
    "text_sha256",
]


def model_label(model_path: str) -> str:
    """How a model directory is named in stores and caches (the packaged model has a bare `model` dir)."""
    name = Path(model_path).name
    return "all-MiniLM-L6-v2" if name == "model" else name


def declared_dimension(model_path: str) -> int | None:
    """The vector size a sentence-transformers directory declares (its pooling's input size, or the
    output size of a Dense module after it), read from its JSON files; None when they do not say."""
    root = Path(model_path)
    try:
        dimension = None
        for module in json.loads((root / "modules.json").read_text()):
            kind = module["type"].rsplit(".", 1)[-1]
            if kind == "Pooling":
                dimension = int(json.loads((root / module["path"] / "config.json").read_text())["word_embedding_dimension"])
            elif kind == "Dense":
                dimension = int(json.loads((root / module["path"] / "config.json").read_text())["out_features"])
            elif kind not in ("Transformer", "Normalize"):
                return None  # a module whose output size is not declared
        return dimension
    except (OSError, ValueError, KeyError, TypeError):
        return None


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# A cache shared across tenants is a timing oracle: remembering a text another tenant had stored took
# 10 ms against 500 ms for a fresh one, so anyone could test whether a text was stored anywhere. Cache
# keys therefore carry the tenant whose entry it is; the same text of two tenants is encoded twice.


def tenant_of(owner_id: str, team_id: str | None) -> str:
    """Whose cache entries these are: a team memory's team (its members share them), else the owner."""
    return f"team:{team_id}" if team_id else f"owner:{owner_id}"


def tenant_digest(tenant: str, text: str) -> str:
    """The cache key of `text` for `tenant`; the length prefix keeps every (tenant, text) pair apart."""
    return text_sha256(f"{len(tenant)}:{tenant}:{text}")


def memory_digest(memory: Memory, text: str) -> str:
    """The cache key of a memory's embedded `text` (engine.embedding_text): its tenant's digest of it."""
    return tenant_digest(tenant_of(memory.owner_id, memory.team_id), text)


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def embed_query_later(self, text: str) -> Future[np.ndarray]:
        """The vector `embed_query` returns, as a future that the model's thread completes: an event
        loop awaits it (`asyncio.wrap_future`) instead of holding a thread while the model runs."""
        ...


def completed(vector: np.ndarray) -> Future[np.ndarray]:
    """A future that already holds `vector` (a cached vector, or a model that answers at once)."""
    done: Future[np.ndarray] = Future()
    done.set_result(vector)
    return done


class InferenceBatcher:
    """Runs the model on one thread and merges the texts of concurrent callers into one batch.

    Under concurrent load, callers that each ran the model at once oversubscribed the cores (every
    call used all of torch's threads); one inference thread with dynamic batching does the same work
    in fewer, larger forward passes. A caller alone pays one hand-off (tens of microseconds).
    """

    MAX_BATCH_TEXTS = 256

    def __init__(self, run: Callable[[list[str], bool], np.ndarray]) -> None:
        self._run = run
        self._queue: queue.Queue[tuple[list[str], bool, Future[np.ndarray]]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_query_later(text).result()

    def embed_query_later(self, text: str) -> Future[np.ndarray]:
        """One text, marked single (a model may take a faster path for a lone unpadded text); the
        future holds its vector."""
        return self.submit([text], True)

    def embed(self, texts: Sequence[str], dimension: int) -> np.ndarray:
        if not texts:
            return np.zeros((0, dimension), dtype=np.float32)
        return self.submit(list(texts), False).result()

    def submit(self, texts: list[str], single: bool) -> Future[np.ndarray]:
        """Queue `texts` for the model's thread; the future holds their vectors (a single text's
        vector alone). A future cancelled before its batch runs (an MCP request cancelled, a server
        shutting down) is left out of the batch."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="xmemo-embedder", daemon=True)
                self._thread.start()
        done: Future[np.ndarray] = Future()
        self._queue.put((texts, single, done))
        return done

    def _serve(self) -> None:
        while True:
            jobs = [self._queue.get()]
            count = len(jobs[0][0])
            while count < self.MAX_BATCH_TEXTS:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                jobs.append(job)
                count += len(job[0])
            # A cancelled future (its caller went away) can no longer take a result: leave it out.
            jobs = [job for job in jobs if job[2].set_running_or_notify_cancel()]
            if not jobs:
                continue
            texts = [text for job in jobs for text in job[0]]
            try:
                vectors = self._run(texts, len(jobs) == 1 and jobs[0][1])
                if len(vectors) != len(texts):
                    raise RuntimeError(f"the model gave {len(vectors)} vectors for {len(texts)} texts")
                start = 0
                for job_texts, single, done in jobs:
                    done.set_result(np.array(vectors[start], dtype=np.float32) if single
                                    else vectors[start : start + len(job_texts)])
                    start += len(job_texts)
            except BaseException as error:  # hand the failure to every caller still waiting; this thread lives on
                for _, _, done in jobs:
                    if not done.done():
                        done.set_exception(error)


class SentenceTransformerEmbedder:
    """A local sentence-transformers model, loaded lazily from a directory, never from a hub."""

    def __init__(self, model_path: str, batch_size: int = 64) -> None:
        self.model_path = model_path
        self.batch_size = batch_size
        self._model: Any = None
        self._query_graph: Any = None  # a traced module, False when tracing is not possible
        self._lock = threading.RLock()
        self._batcher = InferenceBatcher(self._infer)
        self._name = f"sentence-transformers:{model_label(model_path)}"

    @property
    def name(self) -> str:
        return self._name

    def _load(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    with timed(f"load {self.name}"):
                        self._model = load_sentence_transformer(self.model_path)
        return self._model

    @functools.cached_property
    def dimension(self) -> int:
        """Read once: `embed` asks for it on every call."""
        declared = declared_dimension(self.model_path)
        if declared is not None:  # reindexing from the cache then never loads torch
            return declared
        model = self._load()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def embed_query(self, text: str) -> np.ndarray:
        """One text on the latency path (batched with concurrent callers, else the traced graph)."""
        return self._batcher.embed_query(text)

    def embed_query_later(self, text: str) -> Future[np.ndarray]:
        return self._batcher.embed_query_later(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._batcher.embed(texts, self.dimension)

    def _infer(self, texts: list[str], single: bool) -> np.ndarray:
        if single and len(texts) == 1:
            return self._traced([texts[0]])
        return self._encode(texts)

    def _traced(self, texts: list[str]) -> np.ndarray:
        """A traced, frozen graph of the same model for one unpadded text: same vector, ~40 % faster."""
        if self._query_graph is None:
            with self._lock:
                if self._query_graph is None:
                    model = self._load()
                    with timed("trace the query graph"):
                        self._query_graph = _trace_query_graph(model)
        if self._query_graph is False:
            return self._encode(texts)
        import torch

        model = self._load()
        with torch.inference_mode():
            batch = model.tokenizer(texts, return_tensors="pt", truncation=True, max_length=model.max_seq_length)
            return np.asarray(self._query_graph(batch["input_ids"], batch["attention_mask"]).numpy(), dtype=np.float32)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self._load().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def open_embedder(settings: RetrievalSettings, stored: str | None = None) -> Embedder:
    """The configured model on the configured backend (`XMEMO_EMBEDDING_BACKEND`).

    `auto` keeps a store on the backend it was embedded with (`stored`, the store's recorded model
    name), so that an upgrade never asks for a reindex; a new store gets ONNX Runtime when the model
    is one the export reproduces (retrieval.onnx_encoder), else PyTorch."""
    from .onnx_encoder import OnnxEmbedder, exportable

    backend: str = settings.embedding_backend
    if backend == "auto":
        if stored is not None:
            backend = stored.split(":", 1)[0]
        else:
            backend = "onnx" if exportable(settings.embedding_model) else "torch"
    if backend in ("onnx", "onnx-int8"):
        return OnnxEmbedder(settings.embedding_model, settings.models_path, settings.embedding_batch_size,
                            quantized=backend == "onnx-int8", threads=settings.encoder_threads)
    return SentenceTransformerEmbedder(settings.embedding_model, settings.embedding_batch_size)


@functools.lru_cache(maxsize=2)
def load_sentence_transformer(model_path: str) -> Any:
    """Load a local model once per process (engines opened again reuse it); never from a hub."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if not Path(model_path).is_dir():
        raise StoreError(f"embedding model directory not found: {model_path}")
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(model_path, device="cpu", local_files_only=True)


def mean_pooled(model: Any) -> Any:
    """The model's transformer with mean pooling and L2 normalisation, as one torch module taking
    (input_ids, attention_mask): what `encode` computes, in a form torch can trace or export."""
    import torch

    class MeanPooled(torch.nn.Module):
        def __init__(self, transformer: torch.nn.Module) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=-1)

    return MeanPooled(list(model)[0].auto_model).eval()


def _trace_query_graph(model: Any) -> Any:
    """Trace transformer + mean pooling + L2 norm for one unpadded text; verify it against encode().

    Returns False when the model is not a plain transformer-plus-mean-pooling stack or the traced
    graph disagrees with `encode`, so that `embed_query` falls back to the ordinary path.
    """
    import torch

    modules = list(model)
    pooling = modules[1] if len(modules) > 1 else None
    mean_pooling = getattr(pooling, "pooling_mode", None) == "mean" or getattr(  # sentence-transformers >= 5
        pooling, "pooling_mode_mean_tokens", False  # earlier releases
    )
    if len(modules) not in (2, 3) or not mean_pooling:
        return False

    probe = "A probe sentence that checks the traced graph against the model."
    try:
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracing warns about data-dependent branches it records
            batch = model.tokenizer([probe], return_tensors="pt")
            graph = torch.jit.freeze(
                torch.jit.trace(  # type: ignore[no-untyped-call]
                    mean_pooled(model),
                    (batch["input_ids"], batch["attention_mask"]),
                    strict=False,
                )
            )
            traced = graph(batch["input_ids"], batch["attention_mask"])[0].numpy()
    except Exception:  # tracing is an optimisation; any failure keeps the ordinary path
        return False
    expected = model.encode([probe], normalize_embeddings=True, show_progress_bar=False)[0]
    return graph if float(np.dot(traced, expected)) > 0.99999 else False


class CachedEmbedder:
    """An Embedder that serves repeated texts from the cache and encodes only the new ones."""

    QUERY_CACHE_SIZE = 1024

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._queries_lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_with_digests(texts, [text_sha256(t) for t in texts])

    def embed_query(self, text: str, tenant: str | None = None) -> np.ndarray:
        return self.embed_query_later(text, tenant).result()

    def embed_query_later(self, text: str, tenant: str | None = None) -> Future[np.ndarray]:
        """Queries are kept in an in-memory LRU, not on disk: agents repeat them, but they are many.

        The LRU is keyed by the asking tenant (`tenant_of(owner_id, None)`), so that one tenant's
        queries never make another's fast; a query without a tenant is encoded and not kept.
        """
        if tenant is None:
            return self.inner.embed_query_later(text)
        key = tenant_digest(tenant, text)
        with self._queries_lock:
            vector = self._queries.get(key)
            if vector is not None:
                self._queries.move_to_end(key)
                return completed(vector)
        later = self.inner.embed_query_later(text)
        later.add_done_callback(lambda done: self._keep_query(key, done))
        return later

    def _keep_query(self, key: str, done: Future[np.ndarray]) -> None:
        if done.cancelled() or done.exception() is not None:
            return
        with self._queries_lock:
            self._queries[key] = done.result()
            if len(self._queries) > self.QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)

    def embed_with_digests(self, texts: Sequence[str], digests: Sequence[str]) -> np.ndarray:
        cached = self.cache.get_many(self.name, digests)
        missing = {d: t for t, d in zip(texts, digests) if d not in cached}
        if missing:
            fresh = self.inner.embed(list(missing.values()))
            pairs = list(zip(missing.keys(), fresh))
            self.cache.put_many(self.name, pairs)
            cached.update(pairs)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([cached[d] for d in digests]).astype(np.float32, copy=False)

    def cached_vectors(self, digests: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors only, never encoding (the compactor reads these)."""
        return self.cache.get_many(self.name, digests)
