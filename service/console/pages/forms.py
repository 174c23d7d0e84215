"""What the console's pages share: the posted form, its fields, dates and the first lines of memories."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta
from typing import Annotated

from fastapi import Depends
from starlette.datastructures import FormData

from retrieval import MemoryEngine, ValidationError

from ..rendering import checked_form, first_line

__all__ = ["Form", "day", "first_lines", "notice", "text_of"]

Form = Annotated[FormData, Depends(checked_form)]

# What a redirect after a change may announce; any other `?notice=` text is never shown, so a link
# cannot put words of its own in the console's banner.
NOTICES = {
    "saved": "Saved",
    "unchanged": "Nothing changed",
    "forgotten": "Forgotten",
    "archived": "Archived",
    "restored": "Restored",
}


def notice(code: str | None) -> str:
    return NOTICES.get(code or "", "")


def day(value: str | None, end: bool = False) -> str | None:
    """A date input (YYYY-MM-DD) as the start of that day in UTC; `end` takes the next day's start."""
    if not value:
        return None
    if len(value) == 10:
        try:
            chosen = date.fromisoformat(value) + timedelta(days=1 if end else 0)
        except ValueError as error:
            raise ValidationError(f"not a date: {value!r}") from error
        return f"{chosen.isoformat()}T00:00:00Z"
    return value


def text_of(form: FormData, name: str) -> str:
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


def first_lines(engine: MemoryEngine, ids: Iterable[str]) -> dict[str, str]:
    """The first line of each memory's text (rendering.first_line), read in one batch, to show beside its
    id; the ids come from the caller's own pack or audit records. A forgotten memory has none."""
    found = engine.store.get_many(list(dict.fromkeys(ids)))
    return {memory_id: first_line(memory.content) for memory_id, memory in found.items()}
