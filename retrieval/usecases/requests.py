"""The read requests: what a recall, a search or the light recall asks, checked once when it is built.

Every entry point (REST, MCP, the CLI, the console) builds one of these and passes it down; the checks
of the query, the budgets, `as_of` and the five filters run here and nowhere else. What the caller may
see (its read scope and its teams) is decided later, with the principal, by `prepare_read`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..domain import (
    DEFAULT_PACK_ITEMS,
    DEFAULT_PACK_TOKENS,
    DEFAULT_RECALL_LIMIT,
    DEFAULT_SEARCH_LIMIT,
    MAX_PACK_ITEMS,
    MAX_PACK_TOKENS,
    MAX_RECALL_LIMIT,
    MAX_SEARCH_LIMIT,
    READ,
    MemoryStatus,
    MemoryType,
    PathPattern,
    Principal,
    ReadFilters,
    ValidationError,
    check_field,
    check_path_filter,
    check_query,
    check_range,
    check_unit,
    member_team,
    memory_type_or_auto,
    optional_time,
    parse_time,
    require,
)

__all__ = [
    "AS_OF_RANGE",
    "AS_OF_YEARS_PATTERN",
    "FILTER_FIELDS",
    "PACK_WINDOW",
    "Filtered",
    "LightRecallRequest",
    "ReadRequest",
    "RecallRequest",
    "SearchRequest",
]

# The five filters a read may name, in the contract's order.
FILTER_FIELDS = ("scope", "team_id", "bucket", "path_filter", "memory_type")
# A pack reads at most this many times its items' records down the ranking to fill itself.
PACK_WINDOW = 2
# When a question may be asked: date phrases resolve against it, and a moment near the calendar's ends
# ("the past month" of year 1) is no question anyone asks.
AS_OF_RANGE = (datetime(1900, 1, 1, tzinfo=UTC), datetime(3000, 1, 1, tzinfo=UTC))
# What the API's schema promises inside that range: the years 1901 to 2998 as written, so that no zone
# offset (under a day) moves a schema-valid moment outside AS_OF_RANGE once it is read as UTC.
AS_OF_YEARS_PATTERN = r"^(19(0[1-9]|[1-9][0-9])|2([0-8][0-9][0-9]|9([0-8][0-9]|9[0-8])))-"


def _set(request: object, name: str, value: object) -> None:
    object.__setattr__(request, name, value)  # a frozen request normalises its own fields once, when built


@dataclass(frozen=True, slots=True, kw_only=True)
class Filtered:
    """The five filters a read may name. Empty ones filter nothing (a lone `%` neither, for `bucket` and
    `path_filter`); `memory_type` `auto` is any type. Built, each holds its checked value or None, and
    the path filter is parsed."""

    scope: str | None = None
    team_id: str | None = None
    bucket: str | None = None
    path_filter: str | None = None
    memory_type: str | None = None
    path_pattern: PathPattern | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        _set(self, "scope", check_field(self.scope, "scope") if self.scope else None)
        _set(self, "team_id", check_field(self.team_id, "team_id") if self.team_id else None)  # and membership
        _set(self, "bucket", check_field(self.bucket, "bucket") if self.bucket not in (None, "", "%") else None)
        _set(self, "path_pattern", check_path_filter(self.path_filter))
        _set(self, "path_filter", self.path_pattern.text if self.path_pattern is not None else None)
        kind = memory_type_or_auto(self.memory_type) if self.memory_type else None
        _set(self, "memory_type", kind.value if kind is not None else None)

    def filters_for(
        self, principal: Principal, statuses: tuple[MemoryStatus, ...] = (MemoryStatus.ACTIVE,)
    ) -> ReadFilters:
        """What the read may return for `principal`: its own and its teams' memories in `statuses`,
        narrowed by the filters; a principal without memory:read, or a team not its own, is a 403."""
        require(principal, READ)
        return ReadFilters(
            owner_id=principal.owner_id,
            team_ids=principal.team_ids,
            team_id=member_team(principal, self.team_id, "read"),
            bucket=self.bucket,
            scope=self.scope,
            path_pattern=self.path_pattern,
            memory_type=MemoryType(self.memory_type) if self.memory_type else None,
            statuses=statuses,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadRequest(Filtered):
    """A read of a query (stripped when built) under the five filters."""

    query: str

    def __post_init__(self) -> None:
        Filtered.__post_init__(self)
        _set(self, "query", check_query(self.query))

    def records_read(self) -> int | None:
        """How many records the read hydrates at most, when a budget bounds it; None: every candidate."""
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallRequest(ReadRequest):
    """recall_context: the pack's budgets and when the question is asked (`as_of`, ISO 8601 with a zone,
    default now: "last Saturday" resolves against it). `relevance_floor` overrides the settings' floor
    (the evaluation's sweeps)."""

    max_items: int = DEFAULT_PACK_ITEMS
    max_tokens: int = DEFAULT_PACK_TOKENS
    as_of: str | None = None
    relevance_floor: float | None = None
    asked_at: datetime | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        ReadRequest.__post_init__(self)
        _set(self, "max_items", check_range(self.max_items, "max_items", 1, MAX_PACK_ITEMS))
        _set(self, "max_tokens", check_range(self.max_tokens, "max_tokens", 1, MAX_PACK_TOKENS))
        if self.as_of == "":  # not "now": left out is now, and REST refuses the empty text as a time
            raise ValidationError("as_of must be an ISO 8601 time with a zone, or left out for now")
        _set(self, "as_of", optional_time(self.as_of, "as_of"))
        _set(self, "asked_at", parse_time(self.as_of, field_name="as_of") if self.as_of else None)
        if self.asked_at is not None and not AS_OF_RANGE[0] <= self.asked_at < AS_OF_RANGE[1]:
            first, after = AS_OF_RANGE
            raise ValidationError(f"as_of must lie in the years {first.year} to {after.year - 1}")
        if self.relevance_floor is not None:
            _set(self, "relevance_floor", check_unit(self.relevance_floor, "relevance_floor"))

    def records_read(self) -> int | None:
        return PACK_WINDOW * self.max_items


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchRequest(ReadRequest):
    """search_memory: at most `limit` results at `min_score` or above (None: the settings' threshold)."""

    limit: int = DEFAULT_SEARCH_LIMIT
    min_score: float | None = None

    def __post_init__(self) -> None:
        ReadRequest.__post_init__(self)
        _set(self, "limit", check_range(self.limit, "limit", 1, MAX_SEARCH_LIMIT))
        if self.min_score is not None:
            _set(self, "min_score", check_unit(self.min_score, "min_score"))


@dataclass(frozen=True, slots=True, kw_only=True)
class LightRecallRequest(ReadRequest):
    """The light recall (MCP `recall`): the best `limit` memories, no budget report."""

    limit: int = DEFAULT_RECALL_LIMIT

    def __post_init__(self) -> None:
        ReadRequest.__post_init__(self)
        _set(self, "limit", check_range(self.limit, "limit", 1, MAX_RECALL_LIMIT))

    def records_read(self) -> int | None:
        return PACK_WINDOW * self.limit
