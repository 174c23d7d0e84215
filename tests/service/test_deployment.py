"""docker-compose.yml and the Dockerfile parse and wire the service to the Qdrant server (no engine runs here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.support import ROOT


def test_compose_wires_xmemo_to_a_pinned_qdrant():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    qdrant, xmemo = services["qdrant"], services["xmemo"]
    image, _, tag = qdrant["image"].partition(":")
    assert image == "qdrant/qdrant" and tag and tag != "latest"
    assert "healthcheck" in qdrant and any(v.endswith(":/qdrant/storage") for v in qdrant["volumes"])
    assert xmemo["depends_on"]["qdrant"]["condition"] == "service_healthy"
    assert xmemo["environment"]["QDRANT_URL"] == "http://qdrant:6333"
    assert any(v.endswith(":/data") for v in xmemo["volumes"]) and xmemo["environment"]["XMEMO_DATA_DIR"] == "/data"
    assert xmemo["build"] == "." and (ROOT / "Dockerfile").exists()
    assert set(compose["volumes"]) >= {"qdrant-storage", "xmemo-data"}


def test_the_scale_profile_runs_two_replicas_on_postgresql_and_qdrant():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    replicas = [services["xmemo-1"], services["xmemo-2"]]
    postgres = services["postgres"]
    image, _, tag = postgres["image"].partition(":")
    assert image == "postgres" and tag.startswith("15") and "healthcheck" in postgres
    for replica in replicas:
        assert replica["profiles"] == ["scale"]
        assert replica["environment"]["XMEMO_DATABASE_URL"].startswith("postgresql://")
        assert replica["environment"]["QDRANT_URL"] == "http://qdrant:6333"
        assert replica["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert replicas[0]["volumes"] != replicas[1]["volumes"]  # each replica holds its own data dir
    assert replicas[0]["ports"] != replicas[1]["ports"]


def _stages() -> list[list[str]]:
    """The Dockerfile's stages, each as its instructions (continued lines joined)."""
    stages: list[list[str]] = []
    for line in (ROOT / "Dockerfile").read_text().replace("\\\n", "").splitlines():
        if line.startswith("FROM "):
            stages.append([])
        if stages and line.strip() and not line.startswith("#"):
            stages[-1].append(line)
    return stages


def test_the_image_builds_with_cpu_torch_and_serves_without_it() -> None:
    build, final = _stages()
    assert build[0] == "FROM python:3.11-slim AS build" and final[0] == "FROM python:3.11-slim"
    steps = [line for line in build if line.startswith("RUN ")]
    torch = next(i for i, s in enumerate(steps) if "torch==2.13.0" in s and "whl/cpu" in s)
    install = next(i for i, s in enumerate(steps) if 'pip install --no-cache-dir ".[export]"' in s)
    export = next(i for i, s in enumerate(steps) if "embedding_backend='onnx'" in s)
    removed = next(i for i, s in enumerate(steps) if s.startswith("RUN pip uninstall --yes torch"))
    assert torch < install < export < removed < len(steps) - 1  # and the last step checks the runtime
    assert not any("pip install" in line for line in final)  # the final stage installs nothing: no torch
    assert "COPY --from=build /opt/venv /opt/venv" in final
    assert "COPY --from=build /opt/xmemo/models /opt/xmemo/models" in final
    text = "\n".join(final)
    assert "XMEMO_MODEL_CACHE_DIR=/opt/xmemo/models" in text and "HEALTHCHECK" in text and "/readyz" in text
    assert 'CMD ["xmemo", "serve", "--host", "0.0.0.0", "--port", "8420"]' in text


def _program(step: str) -> str:
    return step.split('python -c "', 1)[1].rsplit('"', 1)[0]


# Run with these modules blocked, a program proves that nothing it does needs them.
_BLOCKED = ("torch", "sentence_transformers", "transformers", "onnx")
_WITHOUT_TORCH = f"import sys\nfor name in {_BLOCKED!r}:\n    sys.modules[name] = None\n"


def test_the_build_stage_programs_export_then_embed_without_torch(tmp_path: Path) -> None:
    """The Dockerfile's own two programs: the export (with torch), then the runtime check with torch,
    sentence-transformers, transformers and onnx made unimportable, as the uninstall leaves them."""
    programs = [_program(line) for line in _stages()[0] if line.startswith("RUN python -c")]
    assert len(programs) == 2
    env = {**os.environ, "XMEMO_MODEL_CACHE_DIR": str(tmp_path / "models"), "HF_HUB_OFFLINE": "1"}
    exported = subprocess.run([sys.executable, "-c", programs[0]], capture_output=True, text=True, env=env, timeout=600)
    assert exported.returncode == 0, exported.stderr[-2000:]
    assert list((tmp_path / "models").rglob("model.onnx"))
    checked = subprocess.run(
        [sys.executable, "-c", _WITHOUT_TORCH + programs[1]], capture_output=True, text=True, env=env, timeout=600
    )
    assert checked.returncode == 0, checked.stderr[-2000:]


def test_without_torch_and_without_an_export_the_encoder_says_what_to_install(tmp_path: Path) -> None:
    program = _WITHOUT_TORCH + (
        "from retrieval import RetrievalSettings, StoreError\n"
        "from retrieval.encoding import open_embedder\n"
        "try:\n"
        "    open_embedder(RetrievalSettings()).embed(['x'])\n"
        "except StoreError as error:\n"
        "    print(error.message)\n"
    )
    env = {**os.environ, "XMEMO_MODEL_CACHE_DIR": str(tmp_path / "empty"), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "xmemo-server[export]" in done.stdout and "XMEMO_MODEL_CACHE_DIR" in done.stdout
