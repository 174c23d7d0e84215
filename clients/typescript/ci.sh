#!/usr/bin/env bash
# CI for the TypeScript client: install the locked dev dependencies, build, and run the tests against
# a real server started from XMEMO_BIN (default: the repository's .venv/bin/xmemo). Needs Node.js 20.3+.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v npm >/dev/null; then
  echo "clients/typescript/ci.sh: Node.js 20.3 or later (node, npm) is needed to test the TypeScript client" >&2
  exit 1
fi
export XMEMO_BIN="${XMEMO_BIN:-$(cd ../.. && pwd)/.venv/bin/xmemo}"
npm ci --no-audit --no-fund
npm test
