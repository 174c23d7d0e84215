"""XMEMO_DATABASE_URL / --database-url: PostgreSQL as people write its URL, anything else refused."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from retrieval import RetrievalSettings
from retrieval.storage import engine_url
from service.cli import cli


def test_the_variable_sets_the_system_of_record(monkeypatch):
    monkeypatch.setenv("XMEMO_DATABASE_URL", "postgresql://xmemo:secret@db:5432/memories")
    assert RetrievalSettings().database_url == "postgresql://xmemo:secret@db:5432/memories"
    monkeypatch.setenv("XMEMO_DATABASE_URL", "")
    assert RetrievalSettings().database_url is None


@pytest.mark.parametrize("url", ["mysql://db/x", "sqlite:///tmp/x.db", "db:5432"])
def test_another_database_is_refused(url):
    with pytest.raises(ValidationError, match="database_url must start with"):
        RetrievalSettings(database_url=url)


def test_the_service_picks_psycopg_for_a_plain_url():
    assert engine_url("postgresql://u:p@h:5432/d") == "postgresql+psycopg://u:p@h:5432/d"
    assert engine_url("postgres://u@h/d") == "postgresql+psycopg://u@h/d"
    assert engine_url("postgresql+psycopg://u@h/d") == "postgresql+psycopg://u@h/d"


def test_a_bad_url_on_the_command_line_is_a_user_error(tmp_path):
    result = CliRunner().invoke(
        cli, ["--data-dir", str(tmp_path), "--database-url", "mysql://x/y", "search", "--owner", "a", "q"]
    )
    assert result.exit_code == 1 and "database_url must start with" in result.output


def test_an_unreachable_database_is_exit_3(tmp_path):
    result = CliRunner().invoke(
        cli, ["--data-dir", str(tmp_path), "--database-url", "postgresql://nobody@127.0.0.1:1/none", "keys", "list"]
    )
    assert result.exit_code == 3 and "error:" in result.output
