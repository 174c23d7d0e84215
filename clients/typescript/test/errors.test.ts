/**
 * Each refusal as its error class, with the server's own status, code and message; and the failures
 * without an answer: a server that cannot be reached, a call past its timeout, a call the caller aborts.
 */

import assert from "node:assert/strict";
import { type Server, type Socket, createServer } from "node:net";
import { after, before, describe, test } from "node:test";

import {
  AbortedError,
  AuthenticationError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  RequestTimeoutError,
  UnavailableError,
  ValidationError,
  XmemoClient,
  XmemoClientError,
} from "xmemo-client";

import { type TestServer, freePort, startServer } from "./server.js";

let server: TestServer;
let xmemo: XmemoClient;

before(async () => {
  server = await startServer();
  xmemo = new XmemoClient(server.url, server.adminKey);
});

after(async () => {
  await server?.stop();
});

/** `promise` rejects with an error of `kind` whose status, code and message are exactly these. */
async function rejectsWith(
  promise: Promise<unknown>,
  kind: typeof XmemoClientError,
  expected: { status: number; code: string; message: string | RegExp },
): Promise<XmemoClientError> {
  const error = await promise.then(
    () => assert.fail(`expected ${kind.name}, got an answer`),
    (thrown: unknown) => thrown,
  );
  assert.ok(error instanceof kind, `expected ${kind.name}, got ${String(error)}`);
  assert.ok(error instanceof XmemoClientError);
  assert.equal(error.name, kind.name);
  assert.deepEqual([error.status, error.code], [expected.status, expected.code]);
  if (typeof expected.message === "string") assert.equal(error.message, expected.message);
  else assert.match(error.message, expected.message);
  return error;
}

describe("refusals by status", () => {
  test("an unknown key is AuthenticationError", async () => {
    const stranger = new XmemoClient(server.url, "xmk_unknown_0000000000000000000000000000");
    await rejectsWith(stranger.recallContext("anything"), AuthenticationError, {
      status: 401,
      code: "unauthorized",
      message: "invalid or revoked API key",
    });
  });

  test("an out-of-range budget is ValidationError with the server's message", async () => {
    await rejectsWith(xmemo.recallContext("anything", { max_items: 0 }), ValidationError, {
      status: 422,
      code: "validation_error",
      message: "max_items: Input should be greater than or equal to 1",
    });
  });

  test("blank content is ValidationError", async () => {
    await rejectsWith(xmemo.remember("   ", "notes"), ValidationError, {
      status: 422,
      code: "validation_error",
      message: "content must not be empty or blank",
    });
  });

  test("a body over the server's limit is ValidationError (413)", async () => {
    await rejectsWith(xmemo.remember("x".repeat(1_100_000), "notes"), ValidationError, {
      status: 413,
      code: "payload_too_large",
      message: "request body exceeds 1048576 bytes", // XMEMO_MAX_BODY_BYTES's default
    });
  });

  test("an unknown id is NotFoundError", async () => {
    const unknown = "00000000-0000-0000-0000-000000000000";
    await rejectsWith(xmemo.getMemory(unknown), NotFoundError, {
      status: 404,
      code: "not_found",
      message: `no memory ${unknown}`,
    });
  });

  test("an edit at a stale version is ConflictError", async () => {
    const { id } = await xmemo.remember("The build runs on two workers.", "ci");
    await xmemo.edit(id, 1, { content: "The build runs on four workers." });
    await rejectsWith(xmemo.edit(id, 1, { content: "The build runs on eight workers." }), ConflictError, {
      status: 409,
      code: "conflict",
      message: `memory ${id} is at version 2, not 1`,
    });
    assert.equal((await xmemo.getMemory(id)).content, "The build runs on four workers.");
  });
});

describe("what the client refuses itself", () => {
  test("an unset, empty or blank key is a TypeError when the client is made, never `Bearer undefined`", () => {
    for (const key of [undefined, null, "", "  \n"]) {
      assert.throws(
        () => new XmemoClient(server.url, key as unknown as string),
        (error: unknown) => error instanceof TypeError && /^XmemoClient needs an API key, got /.test(error.message),
        `key ${JSON.stringify(key)}`,
      );
    }
    assert.throws(() => new XmemoClient(server.url, process.env["XMEMO_TEST_KEY_NEVER_SET"]!), {
      name: "TypeError",
      message: "XmemoClient needs an API key, got undefined (is XMEMO_API_KEY set?)",
    });
  });
});

describe("the query's length, as the docs give it: 8,192 characters, counted as code points", () => {
  const longest = "q".repeat(8_192);
  const tooLong = /^query(\.query)?: String should have at most 8192 characters$/;

  test("recallContext and search take a query of 8,192 characters; 8,193 is ValidationError", async () => {
    assert.equal((await xmemo.recallContext(longest)).query, longest);
    assert.equal((await xmemo.search(longest)).query, longest);
    for (const call of [xmemo.recallContext(`${longest}q`), xmemo.search(`${longest}q`)]) {
      await rejectsWith(call, ValidationError, { status: 422, code: "validation_error", message: tooLong });
    }
  });

  test("8,192 emoji are 16,384 in a string's length, and the server takes them", async () => {
    const emoji = "\u{1F600}".repeat(8_192);
    assert.equal(emoji.length, 16_384);
    assert.equal((await xmemo.recallContext(emoji)).query, emoji);
    await rejectsWith(xmemo.recallContext(`${emoji}\u{1F600}`), ValidationError, {
      status: 422,
      code: "validation_error",
      message: tooLong,
    });
  });
});

describe("a scoped read-only key", () => {
  let reader: XmemoClient;

  before(async () => {
    const created = await server.createKey("reader", "memory:read");
    assert.deepEqual([created.owner_id, created.scopes], ["reader", ["memory:read"]]);
    reader = new XmemoClient(server.url, created.key);
  });

  test("reads", async () => {
    const pack = await reader.recallContext("what do I know?");
    assert.deepEqual([pack.items, pack.budget.used_items], [[], 0]);
  });

  test("a write is ForbiddenError and writes nothing", async () => {
    await rejectsWith(reader.remember("I should not be stored.", "notes"), ForbiddenError, {
      status: 403,
      code: "forbidden",
      message: "memory:write scope required",
    });
    await rejectsWith(reader.updateState("reader.cursor", "page 2"), ForbiddenError, {
      status: 403,
      code: "forbidden",
      message: "memory:write scope required",
    });
    assert.deepEqual((await reader.listMemories()).memories, []);
  });
});

describe("no answer", () => {
  /** A TCP server that takes connections and never answers: a hung server, for timeouts. */
  let silent: Server;
  let silentUrl: string;
  const sockets = new Set<Socket>();

  before(async () => {
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.on("close", () => sockets.delete(socket));
    });
    await new Promise<void>((done) => silent.listen(0, "127.0.0.1", done));
    const address = silent.address();
    assert.ok(address !== null && typeof address === "object");
    silentUrl = `http://127.0.0.1:${address.port}`;
  });

  after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((done) => silent.close(() => done()));
  });

  test("a port nothing listens on is UnavailableError", async () => {
    const nowhere = new XmemoClient(`http://127.0.0.1:${await freePort()}`, server.adminKey);
    const error = await rejectsWith(nowhere.health(), UnavailableError, {
      status: 0,
      code: "unreachable",
      message: /^cannot reach the server: connect ECONNREFUSED 127\.0\.0\.1:\d+$/,
    });
    assert.ok(!(error instanceof RequestTimeoutError));
  });

  test("the client's timeout is RequestTimeoutError", async () => {
    const hung = new XmemoClient(silentUrl, server.adminKey, { timeoutMs: 200 });
    const started = performance.now();
    const error = await rejectsWith(hung.recallContext("anything"), RequestTimeoutError, {
      status: 0,
      code: "timeout",
      message: "no answer to POST /v1/recall/context within 200 ms",
    });
    assert.ok(error instanceof UnavailableError);
    assert.ok(performance.now() - started >= 190);
  });

  test("a call's own timeout wins over the client's", async () => {
    const hung = new XmemoClient(silentUrl, server.adminKey);
    await rejectsWith(hung.search("anything", {}, { timeoutMs: 100 }), RequestTimeoutError, {
      status: 0,
      code: "timeout",
      message: "no answer to GET /v1/memories/search within 100 ms",
    });
  });

  test("the caller's signal aborting a call is AbortedError with its reason", async () => {
    const hung = new XmemoClient(silentUrl, server.adminKey);
    const controller = new AbortController();
    const reason = new Error("the agent's turn was cancelled");
    setTimeout(() => controller.abort(reason), 50);
    const error = await rejectsWith(hung.health({ signal: controller.signal }), AbortedError, {
      status: 0,
      code: "aborted",
      message: "GET /healthz was aborted by the caller's signal",
    });
    assert.equal(error.cause, reason);
  });

  test("a signal aborted before the call sends nothing", async () => {
    const content = "Written only if the aborted call were sent.";
    await rejectsWith(xmemo.remember(content, "aborted", {}, { signal: AbortSignal.abort() }), AbortedError, {
      status: 0,
      code: "aborted",
      message: "POST /api/v1/remember was aborted by the caller's signal",
    });
    assert.deepEqual((await xmemo.listMemories({ text: content })).memories, []);
  });
});
