"""Settings of the HTTP service (env prefix `XMEMO_`), with the retrieval settings inside."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from retrieval import RetrievalSettings

__all__ = ["ServiceSettings"]


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="XMEMO_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8420, ge=1, le=65535)
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    rate_limit_per_minute: int = Field(default=0, ge=0, description="requests per key per minute; 0 is off")
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
