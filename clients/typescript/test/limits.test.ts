/**
 * The refusals that need a server set up for them: a data dir short of its disk reserve answers writes
 * 503 (UnavailableError), and a key past its rate limit is answered 429 (RateLimitedError, retryAfter).
 */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { RateLimitedError, UnavailableError, XmemoClient } from "xmemo-client";

import { type TestServer, startServer } from "./server.js";

const REQUESTS_PER_MINUTE = 3;

let server: TestServer;
let xmemo: XmemoClient;

before(async () => {
  server = await startServer({
    XMEMO_DISK_RESERVE_BYTES: String(10 ** 18), // more than any disk has free: every write is refused
    XMEMO_RATE_LIMIT_PER_MINUTE: String(REQUESTS_PER_MINUTE),
  });
  xmemo = new XmemoClient(server.url, server.adminKey);
});

after(async () => {
  await server?.stop();
});

test("a write short of the disk reserve is UnavailableError; past the limit, RateLimitedError", async () => {
  const refused = await xmemo.remember("No room for this.", "notes").catch((error: unknown) => error);
  assert.ok(refused instanceof UnavailableError);
  assert.deepEqual([refused.status, refused.code], [503, "storage_full"]);
  assert.match(refused.message, /XMEMO_DISK_RESERVE_BYTES\); writes are refused until space is freed, reads go on$/);

  const pack = await xmemo.recallContext("reads go on"); // the second request of this minute
  assert.deepEqual(pack.items, []);
  await xmemo.health(); // /healthz takes no key: not counted
  await xmemo.search("still reading"); // the third

  const limited = await xmemo.search("one too many").catch((error: unknown) => error);
  assert.ok(limited instanceof RateLimitedError);
  assert.deepEqual([limited.status, limited.code], [429, "rate_limited"]);
  const said = /^too many requests for this key; retry in (\d+) s$/.exec(limited.message);
  assert.ok(said, limited.message);
  assert.equal(limited.retryAfter, Number(said[1]));
  assert.ok(limited.retryAfter > 50 && limited.retryAfter <= 60, `retryAfter ${limited.retryAfter}`);
});
