"""Settings of the compactor (env prefix `XMEMO_REFLECT_`): clustering, summaries, promotion, lifecycle.

Each default is explained in docs/reflect.md, with the measurement that chose it where there was one.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["ReflectSettings"]


class ReflectSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="XMEMO_REFLECT_", extra="ignore")

    # Clustering: complete linkage over cosine distance, so every two members of a cluster are at
    # least 1 - cluster_max_distance similar (0.4 with all-MiniLM-L6-v2; measured in docs/reflect.md).
    cluster_max_distance: float = Field(default=0.6, gt=0.0, lt=2.0)
    min_cluster_size: int = Field(default=3, ge=2, le=1000)
    # Scripts the embedding model places by meaning (retrieval/domain/writing_systems.py names them). Memories in any
    # other script cluster only when every two of them also share this Jaccard fraction of their words
    # (character pairs for Han, Kana, Hangul). A multilingual model may list more, e.g. '["Latin","Han"]'.
    embedded_scripts: tuple[str, ...] = ("Latin",)
    lexical_min_shared: float = Field(default=0.2, ge=0.0, le=1.0)
    # Summaries: extractive, at most this many member sentences and tokens (cl100k).
    summary_max_sentences: int = Field(default=5, ge=1, le=50)
    summary_max_tokens: int = Field(default=200, ge=32, le=4000)
    summary_diversity: float = Field(default=0.3, ge=0.0, le=1.0, description="MMR weight on novelty")
    # A promotion carries whole each member that restates its fact or states something, to this many
    # tokens (docs/reflect.md: the mean LoCoMo promotion is ~200).
    promotion_max_tokens: int = Field(default=1000, ge=32, le=8000)
    # Promotion: a cluster recurring over this many distinct sessions or days, or one episode read often.
    # How far back a pass looks for earlier episodes a new cluster may recur with: a topic summarized
    # in one session and back weeks later is promoted then (LoCoMo's sessions are days to weeks apart).
    recurrence_lookback_days: float = Field(default=90.0, gt=0.0)
    # A cluster is promoted only when two of its members from different sessions (or days) restate one
    # fact: cosine at least this between them, or a shared identifier or semantic_key (recurrence.py).
    # Chosen on half of the LoCoMo replay and a week of engineering notes (docs/reflect.md).
    promote_min_agreement: float = Field(default=0.65, gt=0.0, le=1.0)
    promote_min_sessions: int = Field(default=2, ge=2)
    promote_min_days: int = Field(default=2, ge=2)
    # An episode alone is promoted for use when fetched by id this many times and read (shown in a
    # pack or a list) for this many distinct questions: being ranked first is no use (docs/reflect.md).
    promote_min_access: int = Field(default=2, ge=1)
    promote_min_questions: int = Field(default=3, ge=1)
    # ... and whose median member has at least this many words: recurring small talk ("Thanks, Nate!")
    # is summarized, never made a durable fact.
    promote_min_words: int = Field(default=8, ge=0)
    # Decay: importance halves every half-life of idleness, never below the floor; changes smaller
    # than min_change are not written.
    decay_half_life_days: float = Field(default=180.0, gt=0.0)
    decay_floor: float = Field(default=0.05, ge=0.0, le=1.0)
    decay_min_change: float = Field(default=0.01, gt=0.0, le=1.0)
    # Protection from decay and archive: pinned (metadata.pinned), or confidence at least this.
    protect_confidence: float = Field(default=0.9, ge=0.0, le=1.0)
    # Archive: decayed importance below this and idle at least this long.
    archive_importance: float = Field(default=0.1, ge=0.0, le=1.0)
    archive_idle_days: float = Field(default=90.0, gt=0.0)
