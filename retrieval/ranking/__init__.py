"""Pure ranking: fusing the two channels, the priors of a query's speaker, dates and keys, blending recency
and importance, collapsing restatements, grouping what reflect made, and packing under an exact token budget."""

from .blend import W_IMPORTANCE, W_RECENCY, Ranked, rank_candidates, recency
from .dates import DATE_BOOST, MAX_DATE_WORDS, TimeWindow, query_window
from .fusion import RRF_K, FusedCandidate, fuse_convex, fuse_rrf
from .grouping import MIN_GROUP, Group, fold_groups, group_candidate
from .packing import ELLIPSIS, MIN_SHORTENED_TOKENS, Pack, PackCandidate, PackedItem, pack_context
from .priors import with_priors
from .restatements import NEAR_DUPLICATE_COSINE, Collapsed, collapse_restatements
from .semantic_keys import KEY_BOOST, may_name_keys, names_key, query_terms
from .speakers import SPEAKER_PRIOR, Addressed, addressed_speaker
from .spread import SESSION_DECAY, asks_several_events, spread_sessions
from .time_led import RECENT_MATCH, TIME_LED_MAX_TERMS, QueryTime, lead_with_window, newest_first, read_time
from .tokens import ENCODING_NAME, TokenCounter, token_counter

__all__ = [
    "DATE_BOOST",
    "ELLIPSIS",
    "ENCODING_NAME",
    "KEY_BOOST",
    "MAX_DATE_WORDS",
    "MIN_GROUP",
    "MIN_SHORTENED_TOKENS",
    "NEAR_DUPLICATE_COSINE",
    "RECENT_MATCH",
    "RRF_K",
    "SESSION_DECAY",
    "SPEAKER_PRIOR",
    "TIME_LED_MAX_TERMS",
    "W_IMPORTANCE",
    "W_RECENCY",
    "Addressed",
    "Collapsed",
    "FusedCandidate",
    "Group",
    "Pack",
    "PackCandidate",
    "PackedItem",
    "QueryTime",
    "Ranked",
    "TimeWindow",
    "TokenCounter",
    "addressed_speaker",
    "asks_several_events",
    "collapse_restatements",
    "fold_groups",
    "fuse_convex",
    "fuse_rrf",
    "group_candidate",
    "lead_with_window",
    "may_name_keys",
    "names_key",
    "newest_first",
    "pack_context",
    "query_terms",
    "query_window",
    "rank_candidates",
    "read_time",
    "recency",
    "spread_sessions",
    "token_counter",
    "with_priors",
]
