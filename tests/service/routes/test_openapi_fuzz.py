"""schemathesis against the live OpenAPI schema of the app served on loopback: no 5xx, no schema violation.

It once failed on a fresh clone under CPU load. The cause was a clock, not a finding: schemathesis
gives each request 10 s by default (`DEFAULT_RESPONSE_TIMEOUT`), and the first recall after a start
loaded and traced the model (14 s measured) because /readyz said ready before any query had run; a
loaded machine pushed it past 10 s and the run reported a timeout. Now the server warms the model and
the index before it is ready, the request timeout is set far above any honest
request (speed is measured by `xmemo bench`, not here), and the example database is off, so a fresh
clone and a used checkout send exactly the same cases for the fixed seed. The app runs in this
process on the fake embedder (schemathesis judges status codes and shapes, not ranking), served by
uvicorn on a thread, so no model loads for it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import served

pytestmark = pytest.mark.slow


def test_schemathesis_finds_nothing(tmp_path, caplog):
    binary = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    assert binary, "schemathesis is a test dependency"
    with served(tmp_path / "data") as (url, app), caplog.at_level("ERROR"):
        admin = app.key("admin", scopes=("memory:read", "memory:write", "memory:admin"))
        done = _fuzz(binary, url, admin)
    assert done.returncode == 0, re.sub(r"(.)\1{80,}", r"\1…", done.stdout)[-6000:]  # long generated runs cut
    assert not [r for r in caplog.records if r.exc_info], "an unexpected error reached the server log"


def _fuzz(binary: str, url: str, key: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            binary,
            "--config-file",
            str(Path(__file__).with_name("schemathesis.toml")),
            "run",
            f"{url}/openapi.json",
            "-H",
            f"Authorization: Bearer {key}",
            "--checks",
            "all",
            # DELETE /api/v1/memories/{id} archives (XMemo's soft delete): an archived memory stays
            # readable by id with status "archived", by design; `?hard=true` forgets, tested apart
            # (tests/service/routes/test_manage_api.py). A 200 after a DELETE is the documented answer.
            "--exclude-checks",
            "use_after_free",
            "--max-examples",
            "40",
            "--seed",
            "20261130",
            "--no-color",
            "--request-timeout",
            "600",
            "--generation-database",
            "none",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
