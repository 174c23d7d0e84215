/**
 * The package's public names: what `import ... from "xmemo-client"` gives, and nothing else; and
 * `require("xmemo-client")` gives the same from the CommonJS build.
 */

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

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

test("require gives the same names from the CommonJS build (dist/cjs), import the ES module build", () => {
  const require = createRequire(import.meta.url);
  const required = require("xmemo-client") as typeof xmemo;
  assert.deepEqual(Object.keys(required).sort(), Object.keys(xmemo).sort());
  assert.match(require.resolve("xmemo-client"), /[\\/]dist[\\/]cjs[\\/]index\.js$/);
  assert.match(fileURLToPath(import.meta.resolve("xmemo-client")), /[\\/]dist[\\/]esm[\\/]index\.js$/);
  assert.equal(required.DEFAULT_TIMEOUT_MS, 30_000);
  // two builds, two copies of each class: an error of one is not an instance of the other's
  assert.notEqual(required.XmemoClientError, xmemo.XmemoClientError);
  const error = new required.NotFoundError(404, "not_found", "no memory");
  assert.ok(error instanceof required.XmemoClientError && error instanceof Error);
  assert.equal(error.name, "NotFoundError");
});
