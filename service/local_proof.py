"""How the CLI knows it talks to the `xmemo serve` that wrote the data dir's server.json: it sends a fresh
challenge to /healthz, and only the process holding the file's secret answers its HMAC (service/middleware.py
answers, service/cli/remote.py asks). The proof tells nothing of the secret, and the secret is sent only
after it."""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["CHALLENGE_HEADER", "MAX_CHALLENGE", "PROOF_HEADER", "proof_of"]

CHALLENGE_HEADER = "X-XMemo-Challenge"
PROOF_HEADER = "X-XMemo-Proof"
MAX_CHALLENGE = 128  # characters; a longer challenge gets no proof


def proof_of(secret: str, challenge: str) -> str:
    """HMAC-SHA256 of the challenge under the server's secret, in hex."""
    return hmac.new(secret.encode(), challenge.encode(), hashlib.sha256).hexdigest()
