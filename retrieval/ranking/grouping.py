"""Reflect's groups in a pack: a summary or promotion folds the members a pack already holds into one block.

A memory reflect made (a summary of a cluster, a promotion of a recurring topic) says again what its
members said. Shown as an item of its own it spends the budget on words the pack holds, or pushes out
a memory the question needed: measured on the lifecycle replay, packs with reflect's memories ranked
among the rest held all of a question's evidence less often than packs without them
(docs/evaluation.md). So while its members are live, such a memory never takes a place in the ranking:
it only groups. When two or more of the memories a pack holds are its members, word for word, they
are shown together under its one header, each line with its speaker (and its day, when they span
several), and the header each of them would have carried is room for further memories. Nothing the
plain pack shows is lost: a regrouped pack that would push out or cut any of it is not used
(usecases/reads.py `_grouped`; dated lines can outweigh the headers they save).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..domain import Memory, carries, spoken
from .packing import PackCandidate

__all__ = ["MIN_GROUP", "Group", "fold_groups", "group_candidate"]

# A group of one would be the member's own block under another header: nothing saved.
MIN_GROUP = 2


@dataclass(frozen=True, slots=True)
class Group:
    """A memory reflect made, and the members of it a pack holds, in the pack's order."""

    holder: Memory
    members: tuple[Memory, ...]


def fold_groups(packed: Sequence[Memory], holders: Sequence[Memory]) -> list[Group]:
    """Each holder, best first, takes the packed memories that are its members and whose every sentence
    its own text holds (`carries`: never by `derived_from` alone), unless an earlier holder took them;
    a holder left with fewer than MIN_GROUP is no group. Groups in holder order."""
    taken: set[str] = set()
    groups = []
    for holder in holders:
        members = set(holder.derived_from)
        held = tuple(
            m
            for m in packed
            if m.id in members and m.id not in taken and carries(holder.content, spoken(m.content, m.speaker))
        )
        if len(held) >= MIN_GROUP:
            taken.update(m.id for m in held)
            groups.append(Group(holder, held))
    return groups


def group_candidate(group: Group) -> PackCandidate:
    """The group as one pack block: the holder's header over the days its members span, one line each."""
    days = sorted({m.occurred_at[:10] for m in group.members})
    span = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    dated = len(days) > 1
    lines = [
        f"- {m.occurred_at[:10]} {spoken(m.content, m.speaker)}" if dated else f"- {spoken(m.content, m.speaker)}"
        for m in group.members
    ]
    holder = group.holder
    return PackCandidate(holder.id, f"{span} · {holder.type.value} · {holder.path}", "\n".join(lines))
