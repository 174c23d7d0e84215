"""Pure ranking: fusing the two channels, the priors of a query's speaker, dates and keys, blending recency
and importance, collapsing restatements, grouping what reflect made, and packing under an exact token budget."""

from .blend import W_IMPORTANCE, W_RECENCY, Ranked, rank_candidates, recency
from .dates import DATE_BOOST, TimeWindow, query_window
from .fusion import RRF_K, FusedCandidate, fuse_convex, fuse_rrf
from .grouping import MIN_GROUP, Group, fold_groups, group_candidate
from .packing import ELLIPSIS, MIN_SHORTENED_TOKENS, Pack, PackCandidate, PackedItem, pack_context
from .priors import with_priors
from .restatements import NEAR_DUPLICATE_COSINE, Collapsed, collapse_restatements
from .semantic_keys import KEY_BOOST, may_name_keys, names_key, query_terms
from .speakers import SPEAKER_PRIOR, Addressed, addressed_speaker
from .tokens import ENCODING_NAME, TokenCounter, token_counter

__all__ = [
    "DATE_BOOST",
    "ELLIPSIS",
    "ENCODING_NAME",
    "KEY_BOOST",
    "MIN_GROUP",
    "MIN_SHORTENED_TOKENS",
    "NEAR_DUPLICATE_COSINE",
    "RRF_K",
    "SPEAKER_PRIOR",
    "W_IMPORTANCE",
    "W_RECENCY",
    "Addressed",
    "Collapsed",
    "FusedCandidate",
    "Group",
    "Pack",
    "PackCandidate",
    "PackedItem",
    "Ranked",
    "TimeWindow",
    "TokenCounter",
    "addressed_speaker",
    "collapse_restatements",
    "fold_groups",
    "fuse_convex",
    "fuse_rrf",
    "group_candidate",
    "may_name_keys",
    "names_key",
    "pack_context",
    "query_terms",
    "query_window",
    "rank_candidates",
    "recency",
    "token_counter",
    "with_priors",
]
