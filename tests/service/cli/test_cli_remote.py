"""The CLI beside a running server: with `xmemo serve` holding the data dir, the data commands reach it
over HTTP (service/cli/remote.py) with the same output and exit codes as on the data dir alone."""

from __future__ import annotations

import json
import os
import signal
import stat
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from retrieval.storage import lock_data_dir
from tests.support import RunningServer, finishes

AS_OF = "2026-12-01T12:00:00Z"
READS = [
    ["search", "--owner", "ana", "payments gateway refunds"],
    ["search", "--owner", "ana", "--json", "payments gateway refunds"],
    ["recall-context", "--owner", "ana", "--as-of", AS_OF, "What is the status of PAY-2291?"],
    ["recall-context", "--owner", "ana", "--as-of", AS_OF, "--json", "What is the status of PAY-2291?"],
    ["reflect", "--owner", "ana", "--dry-run", "--actions", "summarize", "--since", "2026-11-01T00:00:00Z",
     "--until", AS_OF, "--json"],
    ["reflect", "--owner", "ana", "--dry-run", "--actions", "summarize", "--since", "2026-11-01T00:00:00Z",
     "--until", AS_OF],
]  # fmt: skip
LISTS = [["memories", "list", "--owner", "ana"], ["memories", "list", "--owner", "ana", "--json"]]


def _timeless(outputs: list[str]) -> list[object]:
    """What differs between any two runs: a search result's `rank_score` (its recency is counted to the
    moment of the search), the reflect report's `now` and the plan id made from it."""
    found = json.loads(outputs[1])
    for result in found["results"]:
        result.pop("rank_score")
    report = json.loads(outputs[4])
    assert report["dry_run"] is True and report["plan_digest"]
    return [
        outputs[0],
        found,
        *outputs[2:4],
        {k: v for k, v in report.items() if k not in ("now", "plan_id")},
        outputs[5],
    ]


def _outputs(run, commands):  # type: ignore[no-untyped-def]
    results = [run(*command) for command in commands]
    assert [r.exit_code for r in results] == [0] * len(commands), [r.output for r in results]
    return [r.stdout for r in results]


def test_the_data_commands_reach_a_running_server_with_the_same_output(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "data"
    notes = [
        ("PAY-2291: refunds over 10,000 EUR time out in the payments gateway.", "bug:PAY-2291"),
        ("The payments gateway timeout was raised to 30 s on 2026-11-20.", None),
    ]
    for text, key in notes:
        keyed = ["--semantic-key", key] if key else []
        written = run("remember", "--owner", "ana", "--path", "projects/payments", "--occurred-at", AS_OF, *keyed, text)
        assert written.exit_code == 0 and written.stdout.startswith("created "), written.output
    local_lists = _outputs(run, LISTS)  # before any read: a read stamps last_accessed_at
    server = RunningServer(data)
    try:
        announced = data / "server.json"
        assert stat.S_IMODE(announced.stat().st_mode) == 0o600
        assert json.loads(announced.read_text())["url"] == server.url
        assert _outputs(run, LISTS) == local_lists
        written = run("remember", "--owner", "ana", "--path", "calendar", "--occurred-at", AS_OF, "Standup is at 9:30.")
        assert written.exit_code == 0 and written.stdout.startswith("created "), written.output
        keyed = ["--semantic-key", "bug:PAY-2291", "--json"]
        again = run("remember", "--owner", "ana", "--path", "projects/payments", *keyed, notes[0][0])
        assert again.exit_code == 0 and json.loads(again.stdout)["outcome"] == "unchanged"
        # What the CLI wrote is the owner's: the operator acts as --owner.
        with server.client(server.key("ana")) as http:
            assert len(http.get("/api/v1/memories").json()["memories"]) == 3
        # An owner beyond ASCII travels percent-encoded and stays that owner (not its latin-1 reading).
        assert run("remember", "--owner", "bøb", "--path", "p", "Bøb's bike is blue.").exit_code == 0
        with server.client(server.key("bøb")) as http:
            assert [m["content"] for m in http.get("/api/v1/memories").json()["memories"]] == ["Bøb's bike is blue."]
        assert "Bøb's bike is blue." in run("memories", "list", "--owner", "bøb").stdout
        remote_reads = _outputs(run, READS)
        # Errors keep their exit codes: a bad budget is a user error (1), reindex needs the data dir (3).
        refused = run("recall-context", "--owner", "ana", "--max-items", "0", "anything")
        assert refused.exit_code == 1 and "max_items" in refused.output
        assert run("reindex").exit_code == 3
    finally:
        server.stop()
    assert not (data / "server.json").exists()
    local_reads = _outputs(run, READS)
    assert _timeless(local_reads) == _timeless(remote_reads)
    assert "PAY-2291" in remote_reads[2] and "Budget:" in remote_reads[2]


def test_a_stale_announcement_is_ignored(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A server killed without cleaning up leaves server.json; with the lock free, the CLI uses the data dir."""
    data = tmp_path / "data"
    assert run("remember", "--owner", "bo", "--path", "p", "a first note").exit_code == 0
    (data / "server.json").write_text(json.dumps({"url": "http://127.0.0.1:9", "token": "x"}))
    listed = run("memories", "list", "--owner", "bo")
    assert listed.exit_code == 0 and "a first note" in listed.stdout


def test_the_management_verbs_beside_a_running_server(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "data"
    first = run("remember", "--owner", "cy", "--path", "notes", "--json", "The release train leaves on Tuesdays.")
    memory_id = json.loads(first.stdout)["id"]
    server = RunningServer(data)
    try:
        edited = run("memories", "edit", "--owner", "cy", "--expected-version", "1", "--importance", "0.9", memory_id)
        assert edited.exit_code == 0 and edited.stdout.startswith(f"{memory_id}  v2  active"), edited.output
        stale = run("memories", "edit", "--owner", "cy", "--expected-version", "1", "--importance", "0.1", memory_id)
        assert stale.exit_code == 1 and "version" in stale.output  # a conflict, as on the data dir
        archived = run("memories", "archive", "--owner", "cy", memory_id)
        assert archived.exit_code == 0 and f"{memory_id}  v3  archived" in archived.stdout, archived.output
        restored = run("memories", "restore", "--owner", "cy", memory_id)
        assert restored.exit_code == 0 and f"{memory_id}  v4  active" in restored.stdout, restored.output
        other = run("memories", "archive", "--owner", "someone-else", memory_id)
        assert other.exit_code == 1 and f"no memory {memory_id}" in other.output  # another owner's: 404
        remote_history = run("memories", "history", "--owner", "cy", memory_id)
        assert remote_history.exit_code == 0, remote_history.output
        # These read the data dir's files beside the server (SQLite takes concurrent readers).
        assert run("keys", "list").exit_code == 0
        exported = run("export", str(tmp_path / "out.jsonl"))
        assert exported.exit_code == 0 and len((tmp_path / "out.jsonl").read_text().splitlines()) == 1
    finally:
        server.stop()
    local_history = run("memories", "history", "--owner", "cy", memory_id)
    assert json.loads(local_history.stdout) == json.loads(remote_history.stdout)
    assert [v["action"] for v in json.loads(local_history.stdout)["versions"]][-1] == "restore"
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps({"content": f"batch note {i}", "path": "b"}) + "\n" for i in range(3)))
    server = RunningServer(data)
    try:
        forgotten = run("memories", "forget", "--owner", "cy", "--yes", memory_id)
        assert forgotten.exit_code == 0 and forgotten.stdout.startswith("forgot 1 memory; audit "), forgotten.output
        written = run("memories", "batch", "--owner", "dee", str(batch))
        assert written.exit_code == 0 and written.stdout.strip() == "3 created, 0 unchanged", written.output
        again = run("memories", "batch", "--owner", "dee", "--json", str(batch))
        assert [r["outcome"] for r in json.loads(again.stdout)["results"]] == ["unchanged"] * 3
        gone = run("memories", "forget-owner", "--yes", "dee")
        assert gone.exit_code == 0 and gone.stdout.strip() == "forgot 3 memories of dee", gone.output
    finally:
        server.stop()
    listed = run("memories", "list", "--owner", "cy")
    assert listed.exit_code == 0 and memory_id not in listed.stdout


class _Impostor(BaseHTTPRequestHandler):
    """Whatever listens on a dead server's port: answers every request as a write that went well, and
    keeps what it was sent."""

    seen: ClassVar[list[dict[str, Any]]] = []

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).seen.append({"path": self.path, "headers": dict(self.headers), "body": body.decode()})
        answer = json.dumps({"id": "x", "memory_id": "x", "status": "active", "version": 1, "outcome": "created"})
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(answer.encode())

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


def test_a_hung_server_is_exit_3_in_seconds_naming_it(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "data"
    assert run("remember", "--owner", "bo", "--path", "p", "a first note").exit_code == 0
    server = RunningServer(data)
    pid = server.process.pid
    try:
        os.kill(pid, signal.SIGSTOP)
        try:
            hung = finishes(lambda: run("search", "--owner", "bo", "first note"), seconds=30)
        finally:
            os.kill(pid, signal.SIGCONT)
        assert hung.exit_code == 3, hung.output
        assert f"the server at {server.url} (pid {pid}, from server.json) does not answer within 2 s" in hung.output
        assert run("search", "--owner", "bo", "first note").exit_code == 0  # running again, it is reached again
    finally:
        server.stop()


def test_a_dead_servers_port_never_gets_the_secret(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """After a SIGKILL server.json stays; while another process holds the lock, or the file names a live
    process that is not the server, whatever answers at the old URL gets no secret, owner or content."""
    data = tmp_path / "data"
    assert run("remember", "--owner", "bo", "--path", "p", "a first note").exit_code == 0
    server = RunningServer(data)
    announced = data / "server.json"
    try:
        token = json.loads(announced.read_text())["token"]
        server.process.kill()  # SIGKILL: server.json stays behind
        server.process.wait()
        assert announced.exists()
        _Impostor.seen = []
        impostor = ThreadingHTTPServer(("127.0.0.1", server.port), _Impostor)
        threading.Thread(target=impostor.serve_forever, daemon=True).start()
        try:
            with lock_data_dir(data):  # held as `xmemo reindex` or `import` holds it
                dead = run("remember", "--owner", "bo", "--path", "p", "the vault code is 4711")
                # A live pid holding the lock, and an answer at the URL, but not the server that wrote the file.
                announced.write_text(json.dumps({"url": server.url, "pid": os.getpid(), "token": token}))
                other = run("remember", "--owner", "bo", "--path", "p", "the vault code is 4711")
        finally:
            impostor.shutdown()
            impostor.server_close()
    finally:
        server.stop()
    assert dead.exit_code == 3 and "is in use by another xmemo process" in dead.output, dead.output
    assert other.exit_code == 3 and f"what answers at {server.url} is not the server" in other.output, other.output
    assert "created" not in dead.output + other.output
    assert [seen["path"] for seen in _Impostor.seen] == ["/healthz"]  # the probe, and nothing after it
    assert token not in json.dumps(_Impostor.seen) and "4711" not in json.dumps(_Impostor.seen)
