"""Start-up: how long a person waits for a CLI command, and a server for its first answer.

    python -m eval.startup [--memories 2000] [--encoders onnx,torch] [--repeat 3] [--json]

For each encoder, in one run: a store of N synthetic notes is imported once (not timed), then each
command runs as a fresh process, as a person runs it: `xmemo export`, `xmemo recall-context`,
`xmemo search` (wall and CPU seconds); then `xmemo serve` is started and timed to /readyz 200 and
to the answer of its first recall_context. Figures are medians over --repeat runs, with the ratio of each encoder to the
last one named (torch, by default).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from .bench import synthetic_memories
from .serving import start_server, wait_ready

_CLI = [sys.executable, "-c", "from service.cli import main; main()"]


def _timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one command; CPU time barely moves when other
    work shares the machine, wall time does."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([*_CLI, *args], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _serve(data_dir: Path, env: dict[str, str]) -> tuple[float, float]:
    """Seconds from launch to /readyz 200, and the first recall_context's own seconds after it."""
    started = time.perf_counter()
    process, url = start_server(data_dir, env)
    try:
        wait_ready(url, process)
        ready = time.perf_counter() - started
        key = (data_dir / "admin.key").read_text().strip()
        asked = time.perf_counter()
        response = httpx.post(
            f"{url}/v1/recall/context",
            json={"query": "why did the deploy fail", "max_items": 8},
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
        )
        response.raise_for_status()
        return ready, time.perf_counter() - asked
    finally:
        process.terminate()
        process.wait(timeout=30)


def measure(encoder: str, memories: int, repeat: int) -> dict[str, Any]:
    env = {**os.environ, "XMEMO_EMBEDDING_BACKEND": encoder, "HF_HUB_OFFLINE": "1"}
    with tempfile.TemporaryDirectory(prefix=f"xmemo-startup-{encoder}-") as tmp:
        data_dir, notes = Path(tmp) / "data", Path(tmp) / "notes.jsonl"
        lines = [{**line, "owner_id": "admin"} for line in synthetic_memories(memories, seed=31)]
        notes.write_text("".join(json.dumps(line) + "\n" for line in lines))
        store = ["--data-dir", str(data_dir)]
        subprocess.run([*_CLI, *store, "import", str(notes)], env=env, check=True, capture_output=True)
        commands = {
            "export": ["export", str(Path(tmp) / "out.jsonl")],
            "recall_context": ["recall-context", "--owner", "admin", "why did the billing service fail"],
            "search": ["search", "--owner", "admin", "ticket T-31000042"],
        }
        runs: dict[str, list[float]] = {"serve_ready_s": [], "first_recall_after_ready_s": []}
        for _ in range(repeat):
            for name, command in commands.items():
                wall, cpu = _timed([*store, *command], env)
                runs.setdefault(f"{name}_s", []).append(wall)
                runs.setdefault(f"{name}_cpu_s", []).append(cpu)
            ready, first = _serve(data_dir, env)
            runs["serve_ready_s"].append(ready)
            runs["first_recall_after_ready_s"].append(first)
    return {
        "encoder": encoder,
        "memories": memories,
        "repeat": repeat,
        **{name: round(statistics.median(values), 3) for name, values in runs.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--encoders", default="onnx,torch")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    encoders = [e.strip() for e in args.encoders.split(",") if e.strip()]
    results = [measure(encoder, args.memories, args.repeat) for encoder in encoders]
    base = results[-1]
    ratios: dict[str, dict[str, float]] = {
        r["encoder"]: {k: round(v / base[k], 2) for k, v in r.items() if k.endswith("_s") and base[k]}
        for r in results[:-1]
    }
    report = {"results": results, "ratios": ratios}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for r in results:
        print(f"{r['encoder']:10s} " + "  ".join(f"{k} {v}" for k, v in r.items() if k.endswith("_s")))
    for encoder, figures in ratios.items():
        print(f"{encoder} / {base['encoder']}: {figures}")


if __name__ == "__main__":
    main()
