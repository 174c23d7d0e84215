"""The status page's evaluation report in-process: the newest under the reports directory (its setting
or `<data dir>/eval`), its metrics table and its chart served by our own route, and honest messages."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi.testclient import TestClient

from retrieval import RetrievalSettings
from service.api_keys import KeyStore
from service.app import create_app
from service.settings import ServiceSettings
from tests.support import ROOT, FakeEmbedder, sign_in

EXAMPLES = ROOT / "docs" / "eval"
ADMIN = ("memory:read", "memory:write", "memory:admin")


@contextmanager
def _console(data_dir: Path, key_scopes: tuple[str, ...] = ADMIN) -> Iterator[TestClient]:
    """A signed-in console on an app built from the environment's settings (XMEMO_EVAL_REPORTS_DIR included)."""
    settings = ServiceSettings(retrieval=RetrievalSettings(data_dir=data_dir))
    keys = KeyStore.open(data_dir)
    try:
        with TestClient(create_app(settings, embedder=FakeEmbedder()), base_url="http://127.0.0.1:8420") as client:
            sign_in(client, keys.create("alice", scopes=key_scopes).key)
            yield client
    finally:
        keys.close()


def _copy(example: str, target: Path, age_seconds: float = 0.0) -> Path:
    shutil.copytree(EXAMPLES / example, target)
    written = time.time() - age_seconds  # copytree keeps the checkout's times; this report is written now
    os.utime(target / "report.json", (written, written))
    return target


def test_without_a_report_the_page_says_so(tmp_path):
    with _console(tmp_path / "data") as console:
        page = console.get("/ui/status")
        assert page.status_code == 200 and "No evaluation report yet." in page.text
        assert str(tmp_path / "data" / "eval") in page.text  # the default directory, for the admin who can fill it
        assert console.get("/ui/status/eval-chart.png", params={"report": "scifact"}).status_code == 404


def test_the_newest_report_under_the_default_directory_shows_with_its_chart(tmp_path):
    reports = tmp_path / "data" / "eval"
    _copy("locomo", reports / "locomo", age_seconds=3600)
    newest = _copy("scifact", reports / "scifact")
    with _console(tmp_path / "data") as console:
        page = console.get("/ui/status").text
        expected = json.loads((newest / "report.json").read_text())
        assert "Latest evaluation: scifact" in page and "locomo-dev" not in page
        hybrid = re.search(r'<tr><th scope="row">hybrid</th>(.*?)</tr>', page).group(1)  # type: ignore[union-attr]
        metrics = [m for m in expected["strategies"]["hybrid"] if m != "queries"]
        assert re.findall(r">([0-9.]+)</td>", hybrid) == [f"{expected['strategies']['hybrid'][m]:.4f}" for m in metrics]
        assert page.count("<td>OK</td>") == len(expected["checks"])
        source = re.search(r'<img class="chart" src="([^"]+)"', page).group(1)  # type: ignore[union-attr]
        assert source == "/ui/status/eval-chart.png?report=scifact"
        chart = console.get(source)
        assert chart.headers["content-type"] == "image/png" and chart.content == (newest / "chart.png").read_bytes()
        older = console.get("/ui/status/eval-chart.png", params={"report": "locomo"})
        assert older.content == (reports / "locomo" / "chart.png").read_bytes()
        for name in ("../eval/scifact", "..", "/etc", "nope", "scifact/../locomo"):
            assert console.get("/ui/status/eval-chart.png", params={"report": name}).status_code == 404, name


def test_the_reports_directory_is_a_setting(tmp_path, monkeypatch):
    elsewhere = tmp_path / "reports"
    monkeypatch.setenv("XMEMO_EVAL_REPORTS_DIR", str(elsewhere))
    _copy("locomo", elsewhere)  # a report in the directory itself (xmemo eval --out DIR)
    with _console(tmp_path / "data") as console:
        page = console.get("/ui/status").text
        assert "Latest evaluation: locomo-dev" in page and "all evidence in the pack" in page
        assert console.get("/ui/status/eval-chart.png", params={"report": ""}).status_code == 200


def test_a_broken_or_chartless_report_is_said_plainly(tmp_path):
    reports = tmp_path / "data" / "eval"
    _copy("scifact", reports / "scifact", age_seconds=60)
    (reports / "scifact" / "chart.png").unlink()
    with _console(tmp_path / "data") as console:
        page = console.get("/ui/status").text
        assert "Latest evaluation: scifact" in page and "This report has no chart.png." in page
        (reports / "lifecycle").mkdir()
        (reports / "lifecycle" / "report.json").write_text(json.dumps({"lifecycle": {}}))
        page = console.get("/ui/status")
        assert page.status_code == 200 and "could not be shown" in page.text and "not a report of" in page.text
        (reports / "lifecycle" / "report.json").write_text("{not json")
        assert "cannot be read" in console.get("/ui/status").text


def test_a_reader_sees_the_report_but_not_where_it_lives(tmp_path):
    _copy("scifact", tmp_path / "data" / "eval" / "scifact")
    with _console(tmp_path / "data", key_scopes=("memory:read",)) as console:
        page = console.get("/ui/status").text
        assert "Latest evaluation: scifact" in page and str(tmp_path) not in page
        assert console.get("/ui/status/eval-chart.png", params={"report": "scifact"}).status_code == 200
