"""Pure ranking: fusing the two channels, blending recency and importance, collapsing restatements,
and packing under an exact token budget."""

from .blend import W_IMPORTANCE, W_RECENCY, Ranked, rank_candidates, recency
from .fusion import RRF_K, FusedCandidate, fuse_convex, fuse_rrf
from .packing import ELLIPSIS, MIN_SHORTENED_TOKENS, Pack, PackCandidate, PackedItem, pack_context
from .restatements import NEAR_DUPLICATE_COSINE, Collapsed, collapse_restatements
from .tokens import ENCODING_NAME, TokenCounter, token_counter

__all__ = [
    "ELLIPSIS",
    "ENCODING_NAME",
    "MIN_SHORTENED_TOKENS",
    "NEAR_DUPLICATE_COSINE",
    "RRF_K",
    "W_IMPORTANCE",
    "W_RECENCY",
    "Collapsed",
    "FusedCandidate",
    "Pack",
    "PackCandidate",
    "PackedItem",
    "Ranked",
    "TokenCounter",
    "collapse_restatements",
    "fuse_convex",
    "fuse_rrf",
    "pack_context",
    "rank_candidates",
    "recency",
    "token_counter",
]
