"""docker-compose.yml and the Dockerfile parse and wire the service to the Qdrant server (no engine runs here)."""

from __future__ import annotations

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


def test_dockerfile_installs_cpu_torch_and_serves_with_a_health_check():
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    text = "\n".join(lines)
    assert lines[next(i for i, line in enumerate(lines) if line.startswith("FROM"))].startswith("FROM python:3.11")
    assert "torch==2.13.0" in text and "whl/cpu" in text
    assert "HEALTHCHECK" in text and "/readyz" in text
    assert 'CMD ["xmemo", "serve", "--host", "0.0.0.0", "--port", "8420"]' in text


def test_the_image_bakes_the_onnx_export_so_no_container_imports_torch():
    text = (ROOT / "Dockerfile").read_text()
    assert "XMEMO_MODEL_CACHE_DIR=/opt/xmemo/models" in text
    build_steps = [line for line in text.replace("\\\n", " ").splitlines() if line.startswith("RUN ")]
    install = next(i for i, step in enumerate(build_steps) if "pip install --no-cache-dir ." in step)
    export = next(i for i, step in enumerate(build_steps) if "embedding_backend='onnx'" in step)
    assert export > install  # exported after the package (and its model) is installed
