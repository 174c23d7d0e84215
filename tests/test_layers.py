"""The layers of the code, enforced: packages import one way, `retrieval/` subpackages only downward,
code outside a subpackage only through its `__init__`, no import cycle between any two modules, no
folder of more than 16 modules, and the public API of each package is fixed."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import compactor
import retrieval
from retrieval.usecases import FILTER_FIELDS
from tests.support import ROOT

PACKAGES = ("retrieval", "compactor", "service", "eval")
# service -> compactor -> retrieval; eval -> compactor -> retrieval (the lifecycle replay runs reflect).
FORBIDDEN = {
    "retrieval": {"compactor", "service", "eval"},
    "compactor": {"service", "eval"},
    "eval": {"service"},
}
# Inside retrieval/, each layer imports only the layers before it.
RETRIEVAL_LAYERS = ("domain", "storage", "encoding", "index", "ranking", "engine", "usecases")
MAX_MODULES_PER_FOLDER = 16


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> Iterator[str]:
    """Every module name `path` imports (relative imports resolved), at any depth of the file."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target
            yield from (f"{target}.{alias.name}" for alias in node.names)  # `from pkg import module`


def _sources(*packages: str) -> list[Path]:
    return sorted(p for package in packages for p in (ROOT / package).rglob("*.py"))


MODULES = {_module_name(p): p for p in _sources(*PACKAGES)}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_packages_import_one_way(package: str) -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted({i.split(".")[0] for i in _imports(path)} & FORBIDDEN[package])
        for path in _sources(package)
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_python_client_imports_only_itself_httpx_and_its_extras() -> None:
    """clients/python is what an agent installs beside its own code: it reaches the server over HTTP and
    imports nothing but the standard library, itself, httpx (its one dependency), langgraph and the
    OpenAI Agents SDK (its extras): no part of the server, whose packages are not installed beside it."""
    client = ROOT / "clients" / "python" / "xmemo_client"
    own = _module_name(client / "__init__.py")
    allowed = set(sys.stdlib_module_names) | {"httpx", "langgraph", "agents"}
    offenders = [
        f"{path.relative_to(ROOT)} imports {target}"
        for path in sorted(client.glob("*.py"))
        for target in _imports(path)
        if not target.startswith(own) and target.split(".")[0] not in allowed
    ]
    assert offenders == []


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "retrieval" and parts[1] in RETRIEVAL_LAYERS else None


def test_retrieval_layers_import_only_downward() -> None:
    offenders = []
    for path in _sources("retrieval"):
        own = _layer(_module_name(path))
        for target in _imports(path):
            layer = _layer(target)
            if own is None or layer is None or layer == own:
                continue
            if RETRIEVAL_LAYERS.index(layer) > RETRIEVAL_LAYERS.index(own):
                offenders.append(f"{path.relative_to(ROOT)} imports {target} ({own} -> {layer})")
    assert offenders == []


def _past_an_init(importer: str, target: str) -> bool:
    """`target` is a module inside a retrieval subpackage that `importer` does not belong to."""
    parts = target.split(".")
    if len(parts) < 3 or parts[0] != "retrieval" or parts[1] not in RETRIEVAL_LAYERS or target not in MODULES:
        return False
    return _layer(importer) != parts[1]


def test_nothing_imports_past_a_subpackage_init() -> None:
    """Outside a layer (other layers, compactor, service, eval, tests) only `retrieval.<layer>` is imported."""
    offenders = []
    for path in _sources(*PACKAGES, "tests"):
        importer = _module_name(path)
        offenders += [f"{path.relative_to(ROOT)}: {t}" for t in _imports(path) if _past_an_init(importer, t)]
    assert offenders == []


def test_no_two_modules_import_each_other() -> None:
    """No cycle of any length between the modules of the four packages (Tarjan's strongly connected
    components over the import graph, a package's `__init__` counted as a module)."""
    graph = {name: {t for t in _imports(path) if t in MODULES and t != name} for name, path in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    # A package's __init__ that re-exports its modules is imported by them only through the package
    # path itself (a module's own `from . import x` is not used here), so any component is a real cycle.
    assert cycles == []


@pytest.mark.parametrize("root", [*PACKAGES, "tests"])
def test_no_folder_holds_more_than_16_modules(root: str) -> None:
    crowded = {}
    for folder in [ROOT / root, *(p for p in (ROOT / root).rglob("*") if p.is_dir())]:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_MODULES_PER_FOLDER:
            crowded[str(folder.relative_to(ROOT))] = len(modules)
    assert crowded == {}


def test_public_api_of_retrieval() -> None:
    assert sorted(retrieval.__all__) == sorted(
        [
            "AuthenticationError", "Budget", "ConflictError", "ContextPack", "IndexUnavailableError",
            "LightRecallRequest", "Memory", "MemoryEngine", "MemoryStatus", "MemoryType", "ModelMismatchError",
            "NotFoundError", "PackItem", "PackMember", "PermissionDeniedError", "PreparedRead", "Principal",
            "ReadFilters",
            "RecallRequest", "RememberRequest", "RetrievalPlan", "RetrievalSettings", "SearchRequest", "SearchResult",
            "StoreError", "ValidationError", "WriteResult", "XMemoError",
            "add_event", "archive_memory", "get_memory", "hybrid_retrieve", "import_records", "prepare_read",
            "read_filters", "recall", "recall_context", "remember", "render_context_text", "search_memory",
            "update_state",
        ]
    )  # fmt: skip
    for name in retrieval.__all__:
        assert getattr(retrieval, name) is not None


@pytest.mark.parametrize("layer", RETRIEVAL_LAYERS)
def test_every_name_a_layer_exports_exists(layer: str) -> None:
    module = __import__(f"retrieval.{layer}", fromlist=["__all__"])
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_public_api_of_compactor() -> None:
    assert sorted(compactor.__all__) == sorted(
        [
            "ACTIONS",
            "ReflectReport",
            "ReflectRequest",
            "ReflectSettings",
            "list_audit",
            "prepare_plan",
            "reflect",
            "render_reflect_text",
        ]
    )
    for name in compactor.__all__:
        assert getattr(compactor, name) is not None


# What a read's request checks when it is built (retrieval/usecases/requests.py); an entry point that
# calls one of these, or spells the five filters out as a dict, checks or builds a read a second time.
READ_CHECKS = {"check_query", "check_range", "check_path_filter", "optional_time", "read_filters"}


def _filter_dicts(tree: ast.AST) -> list[int]:
    """Lines of dict displays or dict(...) calls naming three or more of the five read filters."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            named = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            named = {k.arg for k in node.keywords if k.arg}
        else:
            continue
        if len(named & set(FILTER_FIELDS)) >= 3:
            lines.append(node.lineno)
    return lines


def test_entry_points_build_a_read_once_and_check_nothing_again() -> None:
    """REST, MCP, the CLI and the console build a RecallRequest or SearchRequest and pass it down: none
    of them calls a read's checks itself or builds the filters as a dict."""
    service = ROOT / "service"
    entry_points = [service / "mcp_tools.py", service / "loop_reads.py"]
    for folder in ("routes", "cli", "console"):
        entry_points += sorted((service / folder).rglob("*.py"))
    offenders = []
    for path in entry_points:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                if name in READ_CHECKS:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} calls {name}")
        offenders += [f"{path.relative_to(ROOT)}:{line} builds the filters" for line in _filter_dicts(tree)]
    assert offenders == []


def test_the_check_of_entry_points_finds_what_it_looks_for() -> None:
    """The walk above on the shapes it refuses: a check called again, the filters as a dict."""
    again = ast.parse("check_query(body.query)\nfilters = {'scope': s, 'team_id': t, 'bucket': b}")
    assert [n.lineno for n in ast.walk(again) if isinstance(n, ast.Call) and getattr(n.func, "id", "") in READ_CHECKS]
    assert _filter_dicts(again) == [2]
    assert _filter_dicts(ast.parse("read(dict(scope=s, bucket=b, path_filter=p, memory_type=m))")) == [1]
