"""The three scopes a key may hold (the XMemo contract): what each lets a caller do is decided in
authorization.py."""

from __future__ import annotations

__all__ = ["ADMIN", "READ", "SCOPES", "WRITE"]

READ, WRITE, ADMIN = "memory:read", "memory:write", "memory:admin"
SCOPES = (READ, WRITE, ADMIN)
