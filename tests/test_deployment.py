"""docker-compose.yml and the Dockerfile parse and wire the service to the Qdrant server (no engine runs here)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


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
    assert set(compose["volumes"]) == {"qdrant-storage", "xmemo-data"}


def test_dockerfile_installs_cpu_torch_and_serves_with_a_health_check():
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    text = "\n".join(lines)
    assert lines[[i for i, line in enumerate(lines) if line.startswith("FROM")][0]].startswith("FROM python:3.11")
    assert "torch==2.13.0" in text and "whl/cpu" in text
    assert "HEALTHCHECK" in text and "/readyz" in text
    assert 'CMD ["xmemo", "serve", "--host", "0.0.0.0", "--port", "8420"]' in text
