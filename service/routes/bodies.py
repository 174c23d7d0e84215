"""What the REST routes accept: request bodies and parameter types, strict pydantic models whose OpenAPI
schema says exactly what the service accepts (unknown fields rejected; the XMemo contract). Their bounds
come from retrieval/domain/limits.py, the ones the use cases check; what the routes answer is in
responses.py."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, Strict, StrictBool, StringConstraints

from compactor.options import DEFAULT_LIMIT, MAX_LIMIT
from compactor.plan import PROPOSAL_PATTERN
from compactor.reflect import MAX_EXCLUDE
from compactor.reflect_report import PLAN_DIGEST_PATTERN
from retrieval.domain import (
    BATCH_LIMIT,
    BLANK_CLASS,
    DEFAULT_PACK_ITEMS,
    DEFAULT_PACK_TOKENS,
    KEY_REGEX,
    MAX_CONTENT_BYTES,
    MAX_LABEL_CHARS,
    MAX_PACK_ITEMS,
    MAX_PACK_TOKENS,
    MAX_QUERY_CHARS,
    whole,
)
from retrieval.usecases import AS_OF_YEARS_PATTERN

__all__ = [
    "NON_BLANK_LABEL",
    "NOT_BLANK_TEXT",
    "NO_NUL",
    "ActionList",
    "AuditActionList",
    "BatchBody",
    "BatchItem",
    "EditBody",
    "EventBody",
    "Label",
    "MemoryTypeName",
    "NewMemoryFields",
    "NonBlankLabel",
    "ProjectContextBody",
    "QueryText",
    "RecallContextBody",
    "ReflectBody",
    "ReflectPlanBody",
    "RememberBody",
    "StateBody",
    "Timestamp",
    "WholeNumber",
    "iso",
    "pattern_words",
]

# "Not blank" as the one character class that JSON Schema, pydantic and the use cases' is_blank read alike
# (retrieval/domain/validation.py BLANK_CLASS).
_SPACE = BLANK_CLASS
NOT_BLANK = f"[^{_SPACE}]"
# Not blank, and no NUL anywhere (PostgreSQL cannot store one; both backends refuse it alike).
NOT_BLANK_TEXT = f"^[^\\x00]*[^{_SPACE}\\x00][^\\x00]*$"
NO_NUL = "^[^\\x00]*$"
# Short labels (path, bucket, scope, team, source): printable, at most 512 characters.
Label = Annotated[str, StringConstraints(max_length=MAX_LABEL_CHARS, pattern=r"^[^\x00-\x1f]*$")]
NON_BLANK_LABEL = f"^[^\\x00-\\x1f]*[^{_SPACE}\\x00-\\x1f][^\\x00-\\x1f]*$"
NonBlankLabel = Annotated[str, StringConstraints(min_length=1, max_length=MAX_LABEL_CHARS, pattern=NON_BLANK_LABEL)]
# Characters, not bytes: the use case refuses content over MAX_CONTENT_BYTES of UTF-8 as well.
Content = Annotated[str, StringConstraints(min_length=1, max_length=MAX_CONTENT_BYTES, pattern=NOT_BLANK_TEXT)]
QueryText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_QUERY_CHARS, pattern=NOT_BLANK_TEXT)]
Key = Annotated[str, StringConstraints(pattern=f"^{KEY_REGEX}$")]
MemoryTypeName = Literal["auto", "episodic", "semantic", "procedural", "identity", "working"]


_NUMERIC = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _text_only(value: Any) -> Any:
    """ISO 8601 text only: lax datetime parsing would also take numbers (and, in a query string, numeric
    text as Unix time), which the schema does not allow."""
    if not isinstance(value, str) or _NUMERIC.fullmatch(value.strip()):
        raise ValueError("must be an ISO 8601 date-time string with a zone")
    return value


Timestamp = Annotated[AwareDatetime, BeforeValidator(_text_only)]


# An integer as JSON Schema has it (5.0 included), never `true` or the text "5": the use cases' rule
# (retrieval/domain/validation.py whole), so that REST, MCP and the CLI accept the same numbers.
WholeNumber = Annotated[int, Strict(), BeforeValidator(whole)]


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RecallContextBody(_Strict):
    query: QueryText
    max_items: WholeNumber = Field(default=DEFAULT_PACK_ITEMS, ge=1, le=MAX_PACK_ITEMS)
    max_tokens: WholeNumber = Field(default=DEFAULT_PACK_TOKENS, ge=1, le=MAX_PACK_TOKENS)
    scope: Label | None = None
    team_id: Label | None = None
    bucket: Label | None = None
    path_filter: Label | None = None
    memory_type: MemoryTypeName | None = None
    as_of: Timestamp | None = Field(
        default=None,
        description='when the question is asked (default now): "last Saturday" resolves against it; '
        "a year from 1901 to 2998",
        json_schema_extra={"pattern": AS_OF_YEARS_PATTERN},
    )


class ProjectContextBody(_Strict):
    team_id: Label | None = None
    max_items: WholeNumber = Field(default=DEFAULT_PACK_ITEMS, ge=1, le=MAX_PACK_ITEMS)
    max_tokens: WholeNumber = Field(default=DEFAULT_PACK_TOKENS, ge=1, le=MAX_PACK_TOKENS)
    durable_query: Annotated[str, StringConstraints(max_length=MAX_QUERY_CHARS)] | None = None


class NewMemoryFields(_Strict):
    """The fields of a new memory, shared by remember and the management API's batch items."""

    content: Content
    path: NonBlankLabel
    memory_type: MemoryTypeName | None = "auto"
    bucket: NonBlankLabel = "personal"
    scope: Label = ""
    team_id: Label | None = None
    source: Label = ""
    importance: float = Field(default=0.5, ge=0.0, le=1.0, strict=True)
    confidence: float = Field(default=0.5, ge=0.0, le=1.0, strict=True)
    expires_at: Timestamp | None = None
    occurred_at: Timestamp | None = Field(default=None, description="when it happened (default: now)")
    speaker: NonBlankLabel | None = Field(
        default=None, description="who said it (a conversation's speaker, a chat's role); matched and preferred"
    )
    session_id: NonBlankLabel | None = Field(
        default=None, description="the conversation it belongs to: BM25 reads it with the turns before it"
    )
    metadata: dict[str, Any] = Field(default_factory=dict)


class RememberBody(NewMemoryFields):
    semantic_key: NonBlankLabel | None = None
    dedupe: StrictBool = False


class StateBody(_Strict):
    state_key: Key
    content: Content
    bucket: NonBlankLabel = "personal"
    scope: Label = ""
    source: Label = ""
    metadata: dict[str, Any] = Field(default_factory=dict)


class EventBody(_Strict):
    content: Content
    event_type: Key
    occurred_at: Timestamp
    session_id: NonBlankLabel | None = None
    bucket: NonBlankLabel = "personal"
    scope: Label = ""
    source: Label = ""
    metadata: dict[str, Any] = Field(default_factory=dict)


ACTION_NAMES: tuple[str, ...] = ("summarize", "promote", "expire", "decay", "archive", "summary", "promotion")
ACTION_NAMES += ("expiry", "importance_decay", "archival")
AUDIT_ACTION_NAMES = ("create", "edit", "supersede", "restore", "forget", *ACTION_NAMES, "decline", "reconsider")
_ACTION = f"(?:{'|'.join(ACTION_NAMES)})"
_AUDIT_ACTION = f"(?:{'|'.join(AUDIT_ACTION_NAMES)})"
# Comma-separated reflect actions and their aliases (the XMemo contract); empty means all five.
ActionList = Annotated[
    str, StringConstraints(max_length=MAX_LABEL_CHARS, pattern=f"^ *(?:{_ACTION} *(?:, *{_ACTION} *)*)?$")
]
# Comma-separated audit actions: the record changes (create, edit, archive, restore, forget) and reflect's.
AuditActionList = Annotated[
    str,
    StringConstraints(max_length=MAX_LABEL_CHARS, pattern=f"^ *(?:{_AUDIT_ACTION} *(?:, *{_AUDIT_ACTION} *)*)?$"),
]


class ReflectBody(_Strict):
    actions_csv: ActionList | None = None
    dry_run: StrictBool = False
    time_window_hours: float = Field(default=24.0, gt=0.0, allow_inf_nan=False, strict=True)
    since: Timestamp | None = None
    until: Timestamp | None = None
    path_filter: Label = "%"
    owner_filter: Label | None = None
    bucket: Label = "%"
    scope: Label | None = None
    team_id: Label | None = None
    limit: WholeNumber = Field(default=DEFAULT_LIMIT, description=f"candidate budget; clamped to 1..{MAX_LIMIT}")


def pattern_words(pattern: str, value: object) -> str:
    """What a schema's pattern asks for, in words, for the 422 message (a person should not read a regex)."""
    if pattern in (NOT_BLANK, NOT_BLANK_TEXT):
        return "must not be empty or blank" if "\x00" not in str(value) else "must not contain the NUL character"
    if pattern == NO_NUL:
        return "must not contain the NUL character (U+0000)"
    if pattern == NON_BLANK_LABEL:
        return "must not be blank, and may not hold control characters"
    if pattern == r"^[^\x00-\x1f]*$":
        return "may not hold control characters"
    if pattern.startswith("^[A-Za-z0-9_.:-]{1,128}="):
        return "must be key=value, a key of letters, digits and _ . : -, and no NUL character"
    if pattern == f"^{KEY_REGEX}$":
        return "must be a lower-case key: a letter or digit, then up to 127 of a-z 0-9 _ . : -"
    if pattern == PROPOSAL_PATTERN:
        return (
            "must be a proposal_id of a dry run: an action, a dash and 12 hex digits, such as 'summarize-3fa29c81d2e4'"
        )
    if pattern == PLAN_DIGEST_PATTERN:
        return "must be a dry run's plan_digest: 64 hex digits"
    for names, allowed in ((_AUDIT_ACTION, AUDIT_ACTION_NAMES), (_ACTION, ACTION_NAMES)):
        if names in pattern:
            unknown = [w.strip() for w in str(value).split(",") if w.strip() and w.strip() not in allowed]
            named = f"{unknown[0]!r} is not one; " if unknown else ""
            return f"must be a comma-separated list of actions: {named}the actions are {', '.join(allowed)}"
    return "is not in the expected form"


StoredType = Literal["episodic", "semantic", "procedural", "identity", "working"]


class EditBody(_Strict):
    """The fields to change (only those sent) and the version they were read at."""

    expected_version: WholeNumber = Field(ge=1, description="409 if the memory is at another version")
    content: Content | None = None
    path: NonBlankLabel | None = None
    memory_type: StoredType | None = None
    importance: float | None = Field(default=None, ge=0.0, le=1.0, strict=True)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0, strict=True)
    source: Label | None = None
    expires_at: Timestamp | None = Field(default=None, description="null clears it")
    metadata: dict[str, Any] | None = None

    def changes(self) -> dict[str, Any]:
        """What was sent, in the use case's names; a null means "clear" for expires_at only."""
        sent = self.model_dump(include=self.model_fields_set - {"expected_version"})
        if "memory_type" in sent:
            sent["type"] = sent.pop("memory_type")
        if sent.get("expires_at") is not None:
            sent["expires_at"] = sent["expires_at"].isoformat()
        return {k: v for k, v in sent.items() if v is not None or k == "expires_at"}


class ReflectPlanBody(ReflectBody):
    """reflect's parameters (the XMemo contract) and, our addition, the plan a dry run showed."""

    expected_plan: str | None = Field(
        default=None,
        pattern=PLAN_DIGEST_PATTERN,
        description="a dry run's plan_digest: plan again and apply only if the plan is still this one, else 409",
    )
    exclude: list[Annotated[str, Field(pattern=PROPOSAL_PATTERN)]] | None = Field(
        default=None,
        max_length=MAX_EXCLUDE,
        description=(
            "proposal_id values of that dry run to leave out: the rest is applied exactly as reviewed, "
            "or nothing is written (409) when an id is not in the plan or leaving it out changes another proposal; "
            "a real run records each as turned down, and later passes hold it back (held_back) until one of its "
            "memories changes or another joins"
        ),
    )
    reconsider: StrictBool = Field(
        default=False,
        description="clear the proposals earlier reviews turned down and plan as if none had been (a real run "
        "records the clearing)",
    )


class BatchItem(NewMemoryFields):
    def line(self) -> dict[str, Any]:
        line = self.model_dump()
        for name in ("expires_at", "occurred_at"):
            line[name] = line[name].isoformat() if line[name] is not None else None
        return line


class BatchBody(_Strict):
    memories: list[BatchItem] = Field(min_length=1, max_length=BATCH_LIMIT)
