"""uvicorn's server, withdrawing the CLI's announcement (cli/remote.py) as it shuts down. After a signal,
uvicorn raises that signal again once it has stopped, so the process ends before any `finally` of the
caller runs; the shutdown hook is the last place that runs for sure. Imported only by `xmemo serve`."""

from __future__ import annotations

import socket
from collections.abc import Callable

import uvicorn

__all__ = ["WithdrawingServer"]


class WithdrawingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, withdraw: Callable[[], None]) -> None:
        super().__init__(config)
        self._withdraw = withdraw

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._withdraw()
        await super().shutdown(sockets)
