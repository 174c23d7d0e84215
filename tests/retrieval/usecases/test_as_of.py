"""`as_of` is when a question is asked; one outside the years 1900 to 2999 is refused by name (422 over
HTTP), and the date phrases of a question asked inside it never fail, whatever they name."""

from __future__ import annotations

import re

import pytest

from retrieval import ValidationError
from retrieval.usecases import AS_OF_RANGE, AS_OF_YEARS_PATTERN, RecallRequest
from tests.support import in_process


@pytest.mark.parametrize("as_of", ["0001-01-01T00:00:00Z", "1899-12-31T23:59:59Z", "3000-01-01T00:00:00Z"])
def test_an_as_of_outside_the_years_1900_to_2999_is_refused_by_name(as_of):
    with pytest.raises(ValidationError, match="as_of"):
        RecallRequest(query="what happened in the past 3 days", as_of=as_of)


def test_over_http_a_far_as_of_is_a_422_and_far_dates_in_the_query_are_answered(tmp_path):
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice")
        far = app.client.post(
            "/v1/recall/context", headers=alice, json={"query": "the past month", "as_of": "9999-12-31T00:00:00Z"}
        )
        assert far.status_code == 422 and "as_of" in far.text
        for query in ("year 9999", "12/31 in the past 3 days", "last monday", "上上周末"):
            body = {"query": query, "as_of": "2999-12-31T23:00:00Z"}
            recalled = app.client.post("/v1/recall/context", headers=alice, json=body)
            searched = app.client.get("/v1/memories/search", headers=alice, params={"query": query})
            assert (recalled.status_code, searched.status_code) == (200, 200), (query, recalled.text, searched.text)


def test_the_schema_promises_only_years_every_zone_keeps_inside_the_range(tmp_path):
    """The fuzzer sent `as_of` 0262-03-16T11:36:44Z, valid by the schema's date-time, and got a 422: the
    schema names the years it accepts, and every moment it admits, in any zone, passes the range check."""
    pattern = re.compile(AS_OF_YEARS_PATTERN)
    first, after = AS_OF_RANGE
    admitted = [year for year in range(10000) if pattern.match(f"{year:04d}-01-01T00:00:00Z")]
    assert admitted == list(range(first.year + 1, after.year - 1))
    for moment in (f"{admitted[0]:04d}-01-01T00:00:00+23:59", f"{admitted[-1]:04d}-12-31T23:59:59-23:59"):
        RecallRequest(query="what happened in the past 3 days", as_of=moment)
    with in_process(tmp_path / "data") as app:
        schema = app.client.get("/openapi.json").json()["components"]["schemas"]["RecallContextBody"]
        assert AS_OF_YEARS_PATTERN in str(schema["properties"]["as_of"])
