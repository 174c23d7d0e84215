"""Scale-out figures in one run: replica convergence delay, and throughput at 16 clients for one
SQLite server, one replica on PostgreSQL and two replicas on PostgreSQL (mode b: each replica its
own embedded Qdrant Edge index, following the change sequence).

    python -m eval.replicas [--admin-url postgresql://postgres@127.0.0.1:5432/test] [--seconds 30] [--json]

Every server is a real `xmemo serve` on loopback in a temporary data dir; each PostgreSQL run gets
a fresh database, dropped afterwards. The load is eval.load's mix (30 % remember, 70 %
recall_context); clients are spread evenly over the replicas.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from .load import run_load
from .serving import start_server, wait_ready


@contextmanager
def _database(admin_url: str) -> Iterator[str]:
    """A fresh database on the server of `admin_url`; yields its URL and drops it afterwards."""
    name = f"xmemo_figures_{uuid.uuid4().hex[:8]}"
    admin = create_engine(admin_url.replace("postgresql://", "postgresql+psycopg://"), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as connection:
            connection.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


@contextmanager
def _servers(root: Path, count: int, database_url: str | None) -> Iterator[tuple[list[str], str]]:
    """`count` replicas (one data dir each); yields their URLs and an admin key."""
    database = ["--database-url", database_url] if database_url else []
    started = [start_server(root / f"r{number}", options=database) for number in range(count)]
    processes, urls = [process for process, _ in started], [url for _, url in started]
    try:
        for process, url in started:
            wait_ready(url, process, timeout=180)
        # the replica that first found no key created the admin key; replicas start at once, so any may have
        keys = [root / f"r{number}" / "admin.key" for number in range(count)]
        yield urls, next(path for path in keys if path.exists()).read_text().strip()
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)


def throughput(urls: list[str], key: str, clients: int, seconds: float, write_share: float = 0.3) -> dict[str, Any]:
    """Requests per second of eval.load's mix, clients spread over `urls`; errors counted."""
    report = run_load(urls, key, clients, seconds, write_share)
    operations = report["operations"]
    answered = {name: operations[name]["count"] for name in ("remember", "recall_context")}
    return {
        "replicas": len(urls),
        "clients": clients,
        "seconds": report["seconds"],
        **answered,
        "errors": report["errors"],
        "writes_not_readable": report["writes_not_readable"],
        "requests_per_s": report["throughput_per_s"],
    }


def convergence(urls: list[str], key: str, samples: int) -> dict[str, Any]:
    """Seconds from a write acknowledged on one replica until a search on another returns it."""
    delays = []
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        for number in range(samples):
            token = f"CV{uuid.uuid4().hex[:10].upper()}"
            writer, reader = urls[number % len(urls)], urls[(number + 1) % len(urls)]
            memory_id = http.post(
                f"{writer}/api/v1/remember", json={"content": f"ticket {token} is open", "path": "figures"}
            ).json()["id"]
            acknowledged = time.perf_counter()
            while True:  # from the acknowledgement to the sending of the search that finds it
                asked = time.perf_counter()
                results = http.get(f"{reader}/v1/memories/search", params={"query": token, "limit": 3}).json()[
                    "results"
                ]
                if any(r["id"] == memory_id for r in results):
                    break
                time.sleep(0.005)
            delays.append(asked - acknowledged)
    ordered = sorted(delays)
    return {
        "samples": samples,
        "p50_s": round(statistics.median(ordered), 3),
        "p95_s": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
        "max_s": round(ordered[-1], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--admin-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="xmemo-replicas-") as tmp:
        root = Path(tmp)
        with _servers(root / "sqlite", 1, None) as (urls, key):
            report["sqlite_1"] = throughput(urls, key, args.clients, args.seconds)
        for count in (1, 2):
            with _database(args.admin_url) as url, _servers(root / f"pg{count}", count, url) as (urls, key):
                report[f"postgresql_{count}"] = throughput(urls, key, args.clients, args.seconds)
                if count == 2:
                    report["convergence"] = convergence(urls, key, args.samples)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for name, figures in report.items():
            print(f"{name:14s} {figures}")


if __name__ == "__main__":
    main()
