"""A real `xmemo serve` process on loopback for end-to-end tests, and clients for it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from eval.serving import free_port, wait_ready
from service.keys import KeyStore


class RunningServer:
    """Starts the service as its own process and stops it; keys are issued straight into its data dir."""

    def __init__(self, data_dir: Path, extra_env: dict[str, str] | None = None, database_url: str | None = None,
                 wait: bool = True) -> None:
        import os

        self.data_dir = data_dir
        self.database_url = database_url
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = data_dir.parent / f"server-{self.port}.log"
        self.log = self.log_path.open("w")
        database = ["--database-url", database_url] if database_url else []
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from service.cli import main; main()", "--data-dir", str(data_dir), *database,
             "serve", "--port", str(self.port)],
            stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **(extra_env or {})},
        )
        if wait:
            self.wait_ready()

    def wait_ready(self, seconds: float = 120) -> None:
        data_dir = self.data_dir
        try:
            wait_ready(self.url, self.process, timeout=seconds)
        except RuntimeError as error:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log_path.read_text()}") from error
            self.stop()
            raise
        if not hasattr(self, "keys"):
            self.keys = KeyStore.open(data_dir, self.database_url)
        admin = data_dir / "admin.key"  # a replica that did not start first finds its key store filled
        self.admin_key = admin.read_text().strip() if admin.exists() else self.key("admin", scopes=(
            "memory:read", "memory:write", "memory:admin"))

    def key(self, owner: str, **kwargs: Any) -> str:
        return self.keys.create(owner, **kwargs).key

    def client(self, key: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        if hasattr(self, "keys"):
            self.keys.close()


async def mcp_call(url: str, key: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    """Open an MCP session with the SDK's client, list the tools and make the calls; returns both."""
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        async with streamable_http_client(f"{url}/mcp", http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                tools = [tool.name for tool in (await session.list_tools()).tools]
                results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results
