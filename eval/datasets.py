"""Loaders: BEIR-format directories, LoCoMo files and LongMemEval files, as documents (memories) and
judged queries."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from retrieval.domain import MAX_CONTENT_BYTES, is_blank

__all__ = [
    "SHARED_DATA",
    "Dataset",
    "Doc",
    "Observation",
    "Query",
    "load_beir",
    "load_dataset",
    "load_locomo",
    "load_longmemeval",
    "slice_dataset",
]

# The evaluation data beside the repository (../shared/data), wherever the command runs from.
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@dataclass(frozen=True, slots=True)
class Doc:
    id: str
    text: str
    group: str  # the owner the memory is stored under; queries search only their group
    occurred_at: str = "2024-01-01T00:00:00Z"
    session_id: str | None = None
    speaker: str | None = None


@dataclass(frozen=True, slots=True)
class Query:
    id: str
    text: str
    group: str
    relevant: dict[str, int]  # doc id -> graded relevance (> 0)
    category: int | None = None
    as_of: str | None = None  # when the question is asked (LongMemEval); None: now
    kind: str | None = None  # LongMemEval's question type
    sessions: tuple[str, ...] = ()  # the sessions that hold the answer (LongMemEval)


@dataclass(frozen=True, slots=True)
class Observation:
    """An annotated fact (LoCoMo `observation`): who it is about and the turns it rests on."""

    group: str
    session: str
    speaker: str
    text: str
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    kind: str  # "beir", "locomo" or "longmemeval"
    docs: list[Doc]
    queries: list[Query]
    meta: dict[str, object] = field(default_factory=dict)


def load_beir(directory: Path, split: str = "test") -> Dataset:
    """corpus.jsonl, queries.jsonl and qrels/<split>.tsv; graded judgements kept, zero grades dropped."""
    docs = []
    with (directory / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            title = (row.get("title") or "").strip()
            text = (row.get("text") or "").strip()
            docs.append(Doc(id=str(row["_id"]), text=f"{title}\n{text}" if title else text, group="corpus"))
    texts = {}
    with (directory / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            texts[str(row["_id"])] = row["text"]
    qrels: dict[str, dict[str, int]] = {}
    with (directory / "qrels" / f"{split}.tsv").open(encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t")
        next(reader)  # header: query-id corpus-id score
        for query_id, doc_id, score in reader:
            if int(score) > 0:
                qrels.setdefault(query_id, {})[doc_id] = int(score)
    queries = [
        Query(id=q, text=texts[q], group="corpus", relevant=rel)
        for q, rel in sorted(qrels.items(), key=lambda kv: _numeric(kv[0]))
    ]
    return Dataset(name=directory.name, kind="beir", docs=docs, queries=queries)


def _numeric(value: str) -> tuple[int, str]:
    return (int(value), value) if value.isdigit() else (1 << 62, value)


_DATE = "%I:%M %p on %d %B, %Y"


def _session_time(text: str) -> str:
    moment = datetime.strptime(text.strip(), _DATE).replace(tzinfo=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def load_locomo(path: Path) -> Dataset:
    """Every dialogue turn one memory (its text and speaker, its session's date); evidence ids are relevant."""
    samples = json.loads(path.read_text(encoding="utf-8"))
    docs: list[Doc] = []
    queries: list[Query] = []
    observations: list[Observation] = []
    for sample in samples:
        group = sample["sample_id"]
        conversation = sample["conversation"]
        sessions = sorted(
            (int(key.split("_")[1]) for key in conversation if re.fullmatch(r"session_\d+", key)),
        )
        for number in sessions:
            when = _session_time(conversation[f"session_{number}_date_time"])
            for turn in conversation[f"session_{number}"]:
                text = turn["text"]
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                docs.append(
                    Doc(
                        id=f"{group}/{turn['dia_id']}",
                        text=text,
                        group=group,
                        occurred_at=when,
                        session_id=f"{group}/session_{number}",
                        speaker=turn["speaker"],
                    )
                )
        observations += _observations(group, sample.get("observation") or {})
        for index, qa in enumerate(sample["qa"]):
            evidence = [e.strip() for item in qa.get("evidence", []) for e in re.split(r"[;,]", item) if e.strip()]
            relevant = {f"{group}/{e}": 1 for e in evidence}
            queries.append(
                Query(
                    id=f"{group}/q{index}",
                    text=qa["question"],
                    group=group,
                    relevant=relevant,
                    category=int(qa["category"]),
                )
            )
    known = {d.id for d in docs}
    queries = [
        Query(q.id, q.text, q.group, {d: g for d, g in q.relevant.items() if d in known}, q.category) for q in queries
    ]
    return Dataset(
        name=path.stem,
        kind="locomo",
        docs=docs,
        queries=queries,
        meta={"observations": [o for o in observations if set(o.evidence) <= known]},
    )


def _observations(group: str, annotated: dict[str, dict[str, list[list[str]]]]) -> list[Observation]:
    """LoCoMo's per-session facts about each speaker, with the turns that are their evidence."""
    found = []
    for session_key, by_speaker in sorted(annotated.items()):
        for speaker, facts in sorted(by_speaker.items()):
            for fact in facts:
                text, evidence = fact[0], fact[1] if len(fact) > 1 else ""
                ids = [
                    f"{group}/{e.strip()}"
                    for item in ([evidence] if isinstance(evidence, str) else evidence)
                    for e in re.split(r"[;,]", item)
                    if e.strip()
                ]
                if ids:
                    found.append(Observation(group, session_key, speaker, text, tuple(ids)))
    return found


_LME_DATE = "%Y/%m/%d (%a) %H:%M"


def _lme_time(text: str) -> str:
    return datetime.strptime(text.strip(), _LME_DATE).replace(tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def load_longmemeval(path: Path) -> Dataset:
    """LongMemEval (Wu et al., ICLR 2025) as released, one question a JSON line: each question's haystack
    is its own store (`group` is the question id), one memory per turn with its role as the speaker and
    its session's date; the turns marked `has_answer` are relevant. Abstention questions (`_abs`), which
    have nothing to find, are skipped, and so are the turns the service refuses as blank (four assistant
    turns of the dev set are a lone zero-width space, none marked `has_answer`)."""
    docs: list[Doc] = []
    queries: list[Query] = []
    with path.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    for row in rows:
        question = str(row["question_id"])
        if question.endswith("_abs"):
            continue
        relevant: dict[str, int] = {}
        for session_id, when, turns in zip(
            row["haystack_session_ids"], row["haystack_dates"], row["haystack_sessions"], strict=True
        ):
            for index, turn in enumerate(turns):
                if is_blank(turn["content"]):
                    continue
                doc_id = f"{question}/{session_id}/{index}"
                docs.append(
                    Doc(
                        id=doc_id,
                        text=_within_limit(turn["content"]),
                        group=question,
                        occurred_at=_lme_time(when),
                        session_id=f"{question}/{session_id}",
                        speaker=turn["role"],
                    )
                )
                if turn.get("has_answer"):
                    relevant[doc_id] = 1
        queries.append(
            Query(
                id=question,
                text=row["question"],
                group=question,
                relevant=relevant,
                as_of=_lme_time(row["question_date"]),
                kind=row["question_type"],
                sessions=tuple(f"{question}/{s}" for s in row["answer_session_ids"]),
            )
        )
    return Dataset(name=path.stem, kind="longmemeval", docs=docs, queries=queries)


def _within_limit(text: str) -> str:
    """A memory's content is at most MAX_CONTENT_BYTES; one pasted document in LongMemEval's dev
    haystacks is longer (76,719 bytes, not an evidence turn) and is cut to it."""
    data = text.encode("utf-8")
    return text if len(data) <= MAX_CONTENT_BYTES else data[:MAX_CONTENT_BYTES].decode("utf-8", "ignore")


def load_dataset(spec: str, shared_data: Path) -> Dataset:
    """`scifact`, `locomo`, `longmemeval`, a BEIR directory, a LoCoMo JSON file or a LongMemEval JSON lines file."""
    aliases = {
        "scifact": shared_data / "scifact",
        "locomo": shared_data / "locomo" / "locomo-dev.json",
        "longmemeval": shared_data / "longmemeval" / "longmemeval-s-dev.jsonl",
    }
    path = aliases.get(spec, Path(spec))
    if path.is_dir():
        return load_beir(path)
    if path.suffix == ".json":
        return load_locomo(path)
    if path.suffix == ".jsonl":
        return load_longmemeval(path)
    raise FileNotFoundError(f"not a BEIR directory, a LoCoMo file or a LongMemEval file: {spec}")


def slice_dataset(dataset: Dataset, queries: int, corpus_stride: int = 5) -> Dataset:
    """A deterministic slice for CI: the first `queries` judged queries, their relevant documents,
    and every `corpus_stride`-th other document as distractors. Scores differ from the full set."""
    chosen = [q for q in dataset.queries if q.relevant][:queries]
    wanted = {doc for q in chosen for doc in q.relevant}
    if dataset.kind == "longmemeval":  # each question is its own store: keep the chosen ones whole
        groups = {q.group for q in chosen}
        return Dataset(
            f"{dataset.name}-slice{queries}", dataset.kind, [d for d in dataset.docs if d.group in groups], chosen
        )
    docs = [d for i, d in enumerate(dataset.docs) if d.id in wanted or i % corpus_stride == 0]
    return Dataset(f"{dataset.name}-slice{queries}", dataset.kind, docs, chosen, dataset.meta)
