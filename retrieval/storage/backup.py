"""Backups as JSON Lines: whose each line is, and the stable id of a line that carries none.

An export line carries `owner_id` and `team_id`. Importing without an owner restores each line's own
owner; importing as one owner refuses any line that belongs to someone else, so that a backup can
never hand one tenant's memories to another.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from ..domain import Memory, ValidationError

__all__ = ["content_id", "line_owner"]

# Ids of id-less lines are UUID5s in this namespace, so importing the same file twice adds nothing.
_LINES = uuid.UUID("6f0d7a52-51a4-4c43-9a55-0f2b5e8d1c37")


def line_owner(owner: str | None, line: dict[str, Any]) -> str:
    """The owner a line is imported for: the line's own, or `owner`, which must then agree with it."""
    written = line.get("owner_id")
    if written is not None and (not isinstance(written, str) or not written.strip()):
        raise ValidationError("owner_id must be a non-empty string")
    if owner is None:
        if written is None:
            raise ValidationError("no owner_id; import it with --owner OWNER")
        return written
    if written is not None and written != owner:
        raise ValidationError(f"belongs to owner {written!r}, not {owner!r}; import without --owner to restore it")
    return owner


def content_id(memory: Memory, occurred_at: str | None) -> str:
    """A line's id when it has none: the same memory (owner, team, place, content, session, time, speaker) the same id.

    `occurred_at` is the time the line gave, if any (not the import time, which differs on every run).
    """
    described = [
        memory.owner_id,
        memory.team_id,
        memory.bucket,
        memory.scope,
        memory.path,
        memory.content,
        memory.session_id,
        occurred_at,
    ]
    if memory.speaker is not None:  # only when set, so that a line without one keeps the id it always had
        described.append(memory.speaker)
    return str(uuid.uuid5(_LINES, json.dumps(described, ensure_ascii=False)))
