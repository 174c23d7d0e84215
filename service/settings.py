"""Settings of the HTTP service (env prefix `XMEMO_`), with the retrieval settings inside."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from compactor import ReflectSettings
from retrieval import RetrievalSettings

__all__ = ["ServiceSettings"]


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="XMEMO_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8420, ge=1, le=65535)
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    rate_limit_per_minute: int = Field(default=0, ge=0, description="requests per key per minute; 0 is off")
    # /metrics is open by default, like /healthz (docs/operations.md says why); set a token to make
    # it answer only `Authorization: Bearer <token>`, as Prometheus' `authorization` block sends.
    metrics_token: str | None = Field(default=None, min_length=16, description="bearer token for /metrics")
    # The proxies whose X-Forwarded-For names the client (comma list of addresses, uvicorn's
    # forwarded_allow_ips); none by default, so no local client can choose its sign-in address.
    trusted_proxies: str = ""
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    # Rebuild the embedded index in another process as `remember` grows it (retrieval/engine/upkeep.py).
    index_upkeep: bool = True
    reflect: ReflectSettings = Field(default_factory=ReflectSettings)
    # The optional background maintenance pass: off unless an interval is set; a dry run (logged
    # report only) unless reflect_apply is true. It covers each owner's personal memories.
    reflect_interval_seconds: float = Field(default=0.0, ge=0.0, description="0 is off")
    reflect_apply: bool = False
    reflect_actions: str = ""
    reflect_time_window_hours: float = Field(default=24.0, gt=0.0)
    # Where the console's status page finds `xmemo eval --out` reports (report.json and chart.png, in
    # this directory or its subdirectories; the newest is shown). Unset: `<data dir>/eval`.
    eval_reports_dir: Path | None = None

    def reports_dir(self) -> Path:
        return self.eval_reports_dir or self.retrieval.data_dir / "eval"
