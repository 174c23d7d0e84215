/** The package's public names: what `import ... from "xmemo-client"` gives, and nothing else. */

import assert from "node:assert/strict";
import { test } from "node:test";

import * as xmemo from "xmemo-client";

test("the runtime exports are the client, its default timeout and the error tree", () => {
  assert.deepEqual(Object.keys(xmemo).sort(), [
    "AbortedError",
    "AuthenticationError",
    "ConflictError",
    "DEFAULT_TIMEOUT_MS",
    "ForbiddenError",
    "NotFoundError",
    "RateLimitedError",
    "RequestTimeoutError",
    "ServerError",
    "UnavailableError",
    "ValidationError",
    "XmemoClient",
    "XmemoClientError",
  ]);
  assert.equal(xmemo.DEFAULT_TIMEOUT_MS, 30_000);
});

test("every error class is an XmemoClientError named after itself", () => {
  const classes = [
    xmemo.AbortedError,
    xmemo.AuthenticationError,
    xmemo.ConflictError,
    xmemo.ForbiddenError,
    xmemo.NotFoundError,
    xmemo.RequestTimeoutError,
    xmemo.ServerError,
    xmemo.UnavailableError,
    xmemo.ValidationError,
  ];
  for (const kind of classes) {
    const error = new kind(0, "code", "message");
    assert.ok(error instanceof xmemo.XmemoClientError && error instanceof Error);
    assert.deepEqual([error.name, error.status, error.code, error.message], [kind.name, 0, "code", "message"]);
  }
  assert.ok(new xmemo.RequestTimeoutError(0, "timeout", "late") instanceof xmemo.UnavailableError);
  assert.equal(new xmemo.RateLimitedError(429, "rate_limited", "wait", 7).retryAfter, 7);
});
