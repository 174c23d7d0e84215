"""Imports run one way (service -> compactor -> retrieval; eval -> compactor -> retrieval, since the lifecycle
replay runs reflect) and the public API is fixed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import retrieval

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "retrieval": {"compactor", "service", "eval"},
    "compactor": {"service", "eval"},
    "eval": {"service"},
}


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_layers_run_one_way(package):
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported_packages(path) & FORBIDDEN[package])
        for path in (ROOT / package).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_public_api_of_retrieval():
    assert sorted(retrieval.__all__) == sorted(
        [
            "AuthenticationError", "ConflictError", "IndexUnavailableError", "Memory", "MemoryEngine",
            "MemoryStatus", "MemoryType", "ModelMismatchError", "NotFoundError", "PermissionDeniedError",
            "Principal", "ReadFilters", "RememberRequest", "RetrievalSettings", "StoreError", "ValidationError",
            "WriteResult", "XMemoError", "add_event", "archive_memory", "get_memory", "hybrid_retrieve",
            "import_records", "prepare_read", "read_filters", "recall", "recall_context", "remember",
            "render_context_text", "search_memory", "update_state",
        ]
    )
    for name in retrieval.__all__:
        assert getattr(retrieval, name) is not None


def test_public_api_of_compactor():
    import compactor

    assert sorted(compactor.__all__) == sorted(
        ["ACTIONS", "ReflectRequest", "ReflectSettings", "list_audit", "prepare_plan", "reflect", "render_reflect_text"]
    )
    for name in compactor.__all__:
        assert getattr(compactor, name) is not None
