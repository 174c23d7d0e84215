"""The console in real Chromium (Debian's /usr/bin/chromium driven by Playwright) against a real server on
loopback: every step is checked against the API's state; no request may leave the server."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from tests.support import ARTIFACTS, ROOT, RunningServer

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
ACTIONS = ("summarize", "promote", "expire", "decay", "archive")
SHOTS = ARTIFACTS / "console"


def _require_browser() -> Any:
    """Playwright's sync API, or a skip (a failure under CI, where .ci/setup installs chromium)."""
    reason = None
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing: apt-get install -y chromium"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "the playwright package is missing: pip install -e '.[test]'"
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return sync_playwright


@pytest.fixture(scope="module")
def server(tmp_path_factory):  # type: ignore[no-untyped-def]
    running = RunningServer(tmp_path_factory.mktemp("console") / "data")
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser_page(server) -> Iterator[tuple[Any, list[str]]]:  # type: ignore[no-untyped-def]
    sync_playwright = _require_browser()
    SHOTS.mkdir(parents=True, exist_ok=True)
    outside: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 900})

        def guard(route: Any) -> None:
            if urlparse(route.request.url).hostname in ("127.0.0.1", "localhost"):
                route.continue_()
            else:
                outside.append(route.request.url)
                route.abort()

        context.route("**/*", guard)
        page = context.new_page()
        yield page, outside
        context.close()
        browser.close()


def _api(server: RunningServer, key: str | None = None) -> httpx.Client:
    return server.client(key or server.admin_key)


def _remember(api: httpx.Client, content: str, path: str, **extra: Any) -> str:
    answer = api.post("/api/v1/remember", json={"content": content, "path": path, **extra})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def _shot(page: Any, name: str) -> None:
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_a_person_finds_corrects_forgets_reflects_and_manages_keys(server, browser_page):
    page, outside = browser_page
    api = _api(server)
    ids = {
        name: _remember(api, text, path)
        for name, text, path in [
            ("deploy", "The deploy window is Tuesday at 10:00", "projects/alpha/ops"),
            ("db", "The database is PostgreSQL 15 on db-2", "projects/alpha/infra"),
            ("secret", "The vault passphrase hint is purple giraffe", "personal/secrets"),
            ("old", "A reminder that has run out", "personal/todo"),
        ]
    }
    api.patch(f"/api/v1/memories/{ids['old']}", json={"expected_version": 1, "expires_at": "2020-01-01T00:00:00Z"})

    page.goto(f"{server.url}/ui/")
    assert page.url.endswith("/ui/login")
    _shot(page, "01-sign-in")
    page.get_by_label("API key").fill(server.admin_key)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Memories").wait_for()
    active = api.get("/api/v1/memories", params={"status": "active"}).json()["memories"]
    assert page.locator("tbody tr").count() == len(active)  # active versions only, by default
    _shot(page, "02-memories")

    page.get_by_label("Path starts with").fill("projects/alpha")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**path_prefix=projects%2Falpha**")
    expected = [
        m["content"] for m in api.get("/api/v1/memories", params={"path_prefix": "projects/alpha"}).json()["memories"]
    ]
    assert page.locator("tbody tr td:first-child").all_inner_texts() == expected

    page.get_by_role("link", name="The deploy window is Tuesday at 10:00").click()
    page.get_by_role("heading", name="Versions").wait_for()
    _shot(page, "03-memory")
    page.get_by_label("Content", exact=True).fill("The deploy window is Thursday at 14:00")
    page.get_by_role("button", name="Save as version 2").click()
    page.get_by_text("Saved.").wait_for()
    edited = api.get(f"/api/v1/memories/{ids['deploy']}").json()
    assert (edited["content"], edited["version"]) == ("The deploy window is Thursday at 14:00", 2)

    points = api.get("/readyz").json()["index_points"]
    page.goto(f"{server.url}/ui/memories/{ids['secret']}")
    page.get_by_label("Remove its content from every store, for good").check()
    page.get_by_role("button", name="Forget").click()
    page.get_by_text("Forgotten.").wait_for()
    assert api.get(f"/api/v1/memories/{ids['secret']}").status_code == 404
    found = api.get("/v1/memories/search", params={"query": "vault passphrase purple giraffe", "min_score": 0.0})
    assert ids["secret"] not in [r["id"] for r in found.json()["results"]]
    assert api.get("/readyz").json()["index_points"] == points - 1
    exported = server.data_dir.parent / "export.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from service.cli import main; main()",
            "--data-dir",
            str(server.data_dir),
            "export",
            str(exported),
        ],
        check=True,
        capture_output=True,
    )
    assert "giraffe" not in exported.read_text() and ids["deploy"] in exported.read_text()

    page.goto(f"{server.url}/ui/audit")
    assert page.locator("tbody tr").count() == 3  # forget, edit (deploy), edit (expires_at)
    _shot(page, "04-audit")

    page.goto(f"{server.url}/ui/recall")
    page.get_by_label("Query").fill("when is the deploy window")
    page.get_by_label("Max tokens (1–12000)").fill("200")
    page.get_by_role("button", name="Recall").click()
    page.get_by_role("heading", name="MCP text").wait_for()
    shown = page.locator("pre.out").first.inner_text()
    pack = api.post("/v1/recall/context", json={"query": "when is the deploy window", "max_tokens": 200}).json()
    assert shown.startswith("### XMemo Context") and pack["items"][0]["id"] in shown
    _shot(page, "05-recall")

    page.goto(f"{server.url}/ui/reflect")
    page.get_by_role("button", name="Dry run").click()
    page.get_by_role("heading", name="expire (1)").wait_for()
    assert api.get(f"/api/v1/memories/{ids['old']}").json()["status"] == "active"  # a dry run writes nothing
    reviewed = api.post("/api/v1/reflect", json={"dry_run": True, "actions_csv": ",".join(ACTIONS)}).json()
    assert page.locator("#plan-digest").inner_text() == reviewed["plan_digest"][:12]
    _shot(page, "06-reflect-dry-run")
    # A memory changes between the review and the apply: the apply refuses, and writes nothing.
    api.patch(f"/api/v1/memories/{ids['db']}", json={"expected_version": 1, "expires_at": "2021-01-01T00:00:00Z"})
    page.get_by_role("button", name="Apply").click()
    page.get_by_role("heading", name="Changed meanwhile").wait_for()
    assert "changed since the plan was reviewed" in page.get_by_role("alert").inner_text()
    assert {api.get(f"/api/v1/memories/{ids[n]}").json()["status"] for n in ("old", "db")} == {"active"}
    _shot(page, "06b-reflect-changed-meanwhile")
    page.get_by_role("link", name="Back to reflect").click()
    page.get_by_role("button", name="Dry run").click()
    page.get_by_role("heading", name="expire (2)").wait_for()
    # Review item by item: untick the database note's expiry; the other change is applied alone.
    page.locator("ul.plan > li", has_text="PostgreSQL 15 on db-2").get_by_label("apply").uncheck()
    _shot(page, "06c-reflect-one-unticked")
    page.get_by_role("button", name="Apply").click()
    page.get_by_role("heading", name="Reflect applied").wait_for()
    assert "expire-" in page.locator("#excluded").inner_text()
    assert [api.get(f"/api/v1/memories/{ids[n]}").json()["status"] for n in ("old", "db")] == ["expired", "active"]
    page.goto(f"{server.url}/ui/reflect")
    page.get_by_role("button", name="Dry run").click()
    page.get_by_role("heading", name="Held back (1)").wait_for()  # the "no" sticks: not proposed again
    assert page.get_by_role("heading", name="expire (1)").count() == 0
    assert "turned down on" in page.locator("#held-back").inner_text()
    _shot(page, "06d-reflect-held-back")
    page.get_by_label("Reconsider proposals turned down before").check()
    page.get_by_role("button", name="Dry run").click()
    page.get_by_role("heading", name="expire (1)").wait_for()
    page.get_by_role("button", name="Apply").click()
    page.get_by_role("heading", name="Reflect applied").wait_for()
    shown_ids = page.locator("#audit-ids li").all_inner_texts()
    assert {api.get(f"/api/v1/memories/{ids[n]}").json()["status"] for n in ("old", "db")} == {"expired"}
    audited = {r["id"] for r in api.get("/api/v1/audit").json()["records"]}
    assert shown_ids and set(shown_ids) <= audited
    _shot(page, "07-reflect-applied")

    page.goto(f"{server.url}/ui/keys")
    page.get_by_label("Owner").fill("erin")
    page.get_by_role("button", name="Create key").click()
    new_key = page.locator("#new-key").inner_text().strip()
    _shot(page, "08-keys")
    assert _api(server, new_key).get("/api/v1/memories").status_code == 200
    key_id = new_key.split("_")[1]
    page.goto(f"{server.url}/ui/keys")  # the key is shown once: not on the next visit
    assert new_key not in page.content()
    page.get_by_role("button", name=f"Revoke key {key_id}").click()
    page.wait_for_url("**/ui/keys")
    assert _api(server, new_key).get("/api/v1/memories").status_code == 401

    page.goto(f"{server.url}/ui/status")
    page.get_by_role("heading", name="Requests since start").wait_for()
    _shot(page, "09-status")

    bobs = _remember(_api(server, server.key("bob")), "bob's own note", "p")
    assert page.goto(f"{server.url}/ui/memories/{bobs}").status == 404
    assert "bob's own note" not in page.content()

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{server.url}/ui/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    _shot(page, "10-memories-390px")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"

    storage = page.evaluate("JSON.stringify([Object.keys(localStorage), Object.keys(sessionStorage), document.cookie])")
    assert json.loads(storage) == [[], [], ""]  # the session cookie is HttpOnly; nothing kept in storage
    assert all(server.admin_key not in c["value"] for c in page.context.cookies())
    assert outside == []


def _signed_in(page: Any, server: RunningServer) -> None:
    """The page at /ui/ with a live session (signing in when this test runs alone)."""
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{server.url}/ui/")
    if page.url.endswith("/ui/login"):
        page.get_by_label("API key").fill(server.admin_key)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("heading", name="Memories").wait_for()


def _linked(link: Any) -> str:
    """The memory id a link to a memory's page names."""
    return str(link.get_attribute("href")).rsplit("/", 1)[1]


def _rows(page: Any, table: str) -> list[list[str]]:
    return [row.locator("td").all_inner_texts() for row in page.locator(f"#{table} tbody tr").all()]


AURORA = (
    "Aurora trip logistics. The aurora trip leaves from Tromsø on 12 February. We take the night bus "
    "north of the city, away from the street lights, and stay out until two in the morning when the "
    "forecast shows a strong geomagnetic storm. The guide brings hot drinks, tripods and spare boots; "
    "we bring warm layers, a head torch with a red light and a fully charged phone."
)


def test_the_recall_playground_shows_what_was_dropped_shortened_and_collapsed(server, browser_page):
    page, outside = browser_page
    api = _api(server)
    ids = {
        name: _remember(api, text, "trips/aurora")
        for name, text in [
            ("logistics", AURORA),
            ("departure", "The aurora trip leaves from Tromsø on 12 February."),  # words the logistics note holds
            (
                "camera",
                "Aurora trip camera settings: manual focus at infinity, ISO 1600 to 3200, exposures of five "
                "to fifteen seconds on a tripod, the widest aperture the lens has, and spare batteries kept "
                "warm in an inside pocket because the cold drains them within the hour near Tromsø.",
            ),
            (
                "clothes",
                "Aurora trip clothing for Tromsø: wool base layers, a fleece, a down jacket, insulated "
                "trousers, two pairs of wool socks, mittens over thin gloves, and a hat that covers the "
                "ears; it can be minus twenty at night on the tundra while we wait for the lights.",
            ),
            (
                "budget",
                "Aurora trip budget: the Tromsø chase tour costs about 1,500 kroner a night, the flights were "
                "booked in October, the cabin is shared by four people, and the spare evening is kept for "
                "a second chase if the first night is cloudy or the forecast is weak.",
            ),
        ]
    }
    _signed_in(page, server)
    page.goto(f"{server.url}/ui/recall")
    query = "aurora trip to Tromsø"
    page.get_by_label("Query").fill(query)
    page.get_by_label("Max items (1–50)").fill("2")
    page.get_by_label("Max tokens (1–12000)").fill("80")
    page.get_by_role("button", name="Recall").click()
    page.get_by_role("heading", name="Left out, shortened and collapsed").wait_for()
    _shot(page, "05b-recall-left-out")

    pack = api.post("/v1/recall/context", json={"query": query, "max_items": 2, "max_tokens": 80}).json()
    plan = pack["retrieval_plan"]
    dropped = [
        [_linked(row.locator("a").first), row.locator("td").nth(1).get_attribute("data-reason")]
        for row in page.locator("#dropped tbody tr").all()
    ]
    assert dropped == [[d["id"], d["reason"]] for d in plan["dropped"]]
    assert {d["reason"] for d in plan["dropped"]} == {"budget", "item_limit"}
    assert sum(d["reason"] == "budget" for d in plan["dropped"]) == pack["budget"]["dropped_items"]
    shortened = [_linked(link) for link in page.locator("#shortened a").all()]
    assert shortened == [i["id"] for i in pack["items"] if i["shortened"]] and shortened
    collapsed = [
        [_linked(link) for link in row.locator("a").all()] for row in page.locator("#collapsed tbody tr").all()
    ]
    assert collapsed == [[c["id"], c["into"]] for c in plan["collapsed"]]
    assert {"id": ids["departure"], "into": ids["logistics"], "reason": "contained"} in plan["collapsed"]
    accounted = (
        [i["id"] for i in pack["items"]] + [d["id"] for d in plan["dropped"]] + [c["id"] for c in plan["collapsed"]]
    )
    assert len(accounted) == len(set(accounted)) == 4  # the 2 x max_items read, each once; the fifth is not read
    # Text beside every id: a person reads what each memory says, the id only as a short tag.
    texts = {v: k for k, v in ids.items()}
    collapsed_row = page.locator("#collapsed tbody tr").first.inner_text()
    assert "The aurora trip leaves from Tromsø on 12 February." in collapsed_row
    assert "Aurora trip logistics." in collapsed_row and ids["logistics"][:8] in collapsed_row
    for row in page.locator("#dropped tbody tr").all():
        memory_id = _linked(row.locator("a").first)
        assert row.locator("a").first.inner_text().split(":")[0].startswith("Aurora trip"), texts[memory_id]
    page.goto(f"{server.url}/ui/recall?query={query}&max_items=4&max_tokens=1500")
    page.get_by_role("heading", name="Items and their scores").wait_for()
    widths = page.locator(".bars .bar").evaluate_all("bars => bars.map(b => parseFloat(b.style.width))")
    bm25 = page.locator(".bars dt:text-is('bm25_score') + dd .bar").evaluate_all(
        "bars => bars.map(b => parseFloat(b.style.width))"
    )
    assert max(widths) == 100.0 and min(widths) < 100.0 and all(0 <= w <= 100 for w in widths)
    assert max(bm25) == 100.0 and min(bm25) < 100.0  # BM25 scaled to its best, not always full
    _shot(page, "05c-recall-text-and-bars")
    page.goto(f"{server.url}/ui/recall?query={query}&max_items=2&max_tokens=80")

    first_dropped = plan["dropped"][0]["id"]
    page.locator(f'#dropped a[href="/ui/memories/{first_dropped}"]').click()
    page.get_by_role("heading", name="Versions").wait_for()
    assert first_dropped in page.get_by_role("heading", level=1).inner_text()
    assert outside == []


def test_the_search_box_finds_by_meaning_within_the_filters(server, browser_page):
    page, outside = browser_page
    api = _api(server)
    car = _remember(api, "The car is parked in the garage on Elm Street", "home/car")
    _remember(api, "Grandma's birthday dinner is on the third Sunday of May", "home/family")
    archived = _remember(api, "The old bicycle is chained behind the shed", "home/bike")
    api.delete(f"/api/v1/memories/{archived}")
    _signed_in(page, server)
    query = "where is the vehicle kept overnight"

    page.get_by_label("Search", exact=True).fill(query)
    page.get_by_label("Path starts with").fill("home/")
    page.get_by_role("button", name="Filter").click()
    page.get_by_text("No memory matches these filters.").wait_for()  # no memory contains these words

    page.get_by_label("Match by").select_option("meaning")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**mode=meaning**")
    assert "Ranked by meaning" in page.locator("#meaning-note").inner_text()
    shown = [link.get_attribute("href").rsplit("/", 1)[1] for link in page.locator("tbody tr td:first-child a").all()]
    found = api.get(
        "/v1/memories/search", params={"query": query, "path_filter": "home/%", "min_score": 0.0, "limit": 25}
    ).json()["results"]
    assert shown[0] == car == found[0]["id"]
    assert shown == [r["id"] for r in found]  # the agents' ranking, same order
    assert archived not in shown  # active versions only, by default
    assert all(
        m["path"].startswith("home/") for m in api.get("/api/v1/memories").json()["memories"] if m["id"] in shown
    )
    _shot(page, "02b-memories-by-meaning")

    headers = page.locator("table.list thead th").all_inner_texts()
    assert headers[:6] == ["Content", "Type", "Status", "Path", "Occurred", "Created"]
    car_row = page.locator(f'tbody tr:has(a[href="/ui/memories/{car}"])')
    occurred = api.get(f"/api/v1/memories/{car}").json()["occurred_at"]
    assert car_row.locator("td.occurred").inner_text() == occurred[:16].replace("T", " ")

    page.get_by_label("Status").select_option("")  # any status
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**status=&**")
    assert archived in page.content() and car in page.content()
    assert outside == []


def _write_report(example: Path, target: Path, age_seconds: float) -> None:
    """A copy of a committed `xmemo eval --out` report, as if written `age_seconds` ago."""
    shutil.copytree(example, target)
    written = time.time() - age_seconds
    os.utime(target / "report.json", (written, written))


def test_the_status_page_shows_the_latest_evaluation_report(server, browser_page):
    page, outside = browser_page
    _signed_in(page, server)
    page.goto(f"{server.url}/ui/status")
    assert "No evaluation report yet." in page.locator("#evaluation").inner_text()

    examples = ROOT / "docs" / "eval"
    reports = server.data_dir / "eval"  # the default reports directory: `<data dir>/eval`
    _write_report(examples / "scifact", reports / "scifact", age_seconds=60)
    page.reload()
    page.get_by_role("heading", name="Latest evaluation: scifact").wait_for()
    expected = json.loads((examples / "scifact" / "report.json").read_text())["strategies"]
    rows = {
        row.locator("th").inner_text(): row.locator("td").all_inner_texts()
        for row in page.locator("#eval-metrics tbody tr").all()
    }
    assert rows == {
        name: [f"{v:.4f}" for m, v in scores.items() if m != "queries"] for name, scores in expected.items()
    }
    chart = page.get_by_role("img", name=re.compile("nDCG, recall and MRR"))
    chart.scroll_into_view_if_needed()
    assert (
        page.evaluate(
            "document.querySelector('img.chart').complete && document.querySelector('img.chart').naturalWidth"
        )
        > 0
    )
    assert urlparse(chart.get_attribute("src") or "").netloc == ""  # served by this server, from our own route
    _shot(page, "09b-status-evaluation")

    _write_report(examples / "locomo", reports / "locomo", age_seconds=0)  # a newer report replaces it on the page
    page.reload()
    page.get_by_role("heading", name="Latest evaluation: locomo-dev").wait_for()
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # wide tables scroll inside their card
    _shot(page, "09c-status-390px")
    assert outside == []


HARBOUR = [  # four long notes on one topic and a sentence one of them holds: a pack of 3 items under 200 tokens
    "Harbour sailing course logistics. The sailing course starts at the north harbour on 3 June at nine. "
    "We rig the dinghies on the slipway, check the forecast for gusts above twenty knots, and stay inside "
    "the breakwater on the first morning; the instructor brings radios and the club lends life jackets.",
    "The sailing course starts at the north harbour on 3 June at nine.",
    "Harbour sailing course knots: the bowline, the clove hitch, the reef knot and the figure of eight, "
    "practised on the pontoon until each takes under ten seconds, then tied again with cold wet hands "
    "because that is how they are needed when a squall comes over the harbour wall.",
    "Harbour sailing course clothing: a spray jacket, quick-dry trousers, soft-soled shoes that grip a wet "
    "deck, sunglasses on a cord, a warm hat for the evening sail, and a dry bag for a spare fleece and the "
    "phone, since everything in the dinghy gets soaked by the second tack across the harbour.",
    "Harbour sailing course costs: the week is 420 euros with the dinghy, the club membership is 35 more, "
    "the evening races are free for members, and a private lesson on the keelboat can be booked for the "
    "last afternoon if the wind allows it in the harbour.",
]

# The MCP text's Budget line (docs: contract §4): what the page's MCP figures must agree with.
BUDGET_LINE = re.compile(r"Budget: used (\d+)/(\d+) tokens, (\d+)/(\d+) items; dropped (\d+), shortened (\d+)")


def test_the_recall_page_names_each_count_and_they_agree(server, browser_page):
    page, outside = browser_page
    api = _api(server)
    for text in HARBOUR:
        _remember(api, text, "courses/sailing")
    query, body = "harbour sailing course", {"max_items": 3, "max_tokens": 200}
    _signed_in(page, server)
    page.goto(f"{server.url}/ui/recall?query={query}&max_items={body['max_items']}&max_tokens={body['max_tokens']}")
    page.get_by_role("heading", name="What each count is").wait_for()
    _shot(page, "05d-recall-counts")

    pack = api.post("/v1/recall/context", json={"query": query, **body}).json()
    budget, plan = pack["budget"], pack["retrieval_plan"]
    text = page.locator("pre.out").first.inner_text()
    used, most, shown, items, mcp_dropped, mcp_shortened = map(int, BUDGET_LINE.search(text).groups())  # type: ignore[union-attr]
    reasons = [d["reason"] for d in plan["dropped"]]
    labels = page.locator("#figures dt").all_inner_texts()
    values = page.locator("#figures dd").all_inner_texts()
    assert dict(zip(labels, values, strict=True)) == {
        "Pack items (budget.used_items / max_items)": f"{budget['used_items']}/{budget['max_items']}",
        "Pack tokens: its context_text (budget.used_tokens / max_tokens)": (
            f"{budget['used_tokens']}/{budget['max_tokens']}"
        ),
        "Pack items shortened to fit (budget.shortened_items)": str(budget["shortened_items"]),
        "Over the token budget: among the top max items, kept out by tokens (budget.dropped_items)": str(
            budget["dropped_items"]
        ),
        "Beyond max items (reason item_limit)": str(reasons.count("item_limit")),
        "Below the relevance floor (reason floor)": str(reasons.count("floor")),
        "Left out in all (retrieval_plan.dropped)": str(len(plan["dropped"])),
        "Collapsed into a packed item (retrieval_plan.collapsed)": str(len(plan["collapsed"])),
        "MCP text tokens: the whole text, heading, Items, Budget and Reference lines and body (its Budget used)": (
            f"{used}/{most}"
        ),
        "MCP text items (its Items / max_items)": f"{shown}/{items}",
        "MCP text dropped: over the token budget plus pack items it leaves out to fit its lines (its Budget dropped)": (
            str(mcp_dropped)
        ),
        "MCP text shortened (its Budget shortened)": str(mcp_shortened),
    }
    assert reasons.count("budget") == budget["dropped_items"] and reasons.count("item_limit") > 0
    assert plan["collapsed"] and shown < budget["used_items"]  # the MCP text leaves a pack item out to fit its lines
    assert (most, items) == (budget["max_tokens"], budget["max_items"])
    assert mcp_dropped == budget["dropped_items"] + budget["used_items"] - shown
    assert page.get_by_role("heading", name=f"Left out ({len(plan['dropped'])})").is_visible()
    assert page.get_by_role("heading", name=f"Collapsed ({len(plan['collapsed'])})").is_visible()
    # No other count of tokens or of dropped items anywhere on the page, outside the two outputs themselves.
    rest = page.evaluate(
        "() => { const m = document.querySelector('main').cloneNode(true);"
        " m.querySelectorAll('form, pre.out, #figures').forEach(e => e.remove()); return m.textContent; }"
    )
    rest = re.sub(r"block: \d+ tokens", "", rest)
    assert not re.search(r"\d+\s*/\s*\d+|(?i:dropped)\W*\d|\d+\s*tokens|(?i:tokens)\W*\d", rest), rest
    assert outside == []


def test_the_memories_table_fits_a_390px_screen(server, browser_page):
    page, outside = browser_page
    api = _api(server)
    _remember(api, "The ferry to the island leaves at 07:40 from pier 3", "travel/islands/ferries/timetables")
    _signed_in(page, server)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{server.url}/ui/")
    headers = page.locator("table.list thead th").all_inner_texts()
    columns = [n for n, name in enumerate(headers, 1) if name.split(" ")[0] in ("Occurred", "Created")]  # "Created ↓"
    assert len(columns) == 2
    cells = page.locator(", ".join(f"table.list tbody td:nth-child({n})" for n in columns))
    assert cells.count() == 2 * page.locator("table.list tbody tr").count() > 0
    boxes = cells.evaluate_all(
        "cells => cells.map(c => { const r = c.getBoundingClientRect();"
        " return [c.scrollWidth <= c.clientWidth, r.left >= 0, r.right <= window.innerWidth, c.innerText]; })"
    )
    assert all(box[:3] == [True, True, True] for box in boxes), boxes
    _shot(page, "10b-memories-dates-390px")
    assert outside == []
