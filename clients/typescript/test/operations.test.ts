/** Every operation of XmemoClient against a real server, with the exact answers the contract defines. */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { NotFoundError, XmemoClient } from "xmemo-client";

import { type TestServer, startServer } from "./server.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let server: TestServer;
let xmemo: XmemoClient;

before(async () => {
  server = await startServer();
  xmemo = new XmemoClient(server.url, server.adminKey);
});

after(async () => {
  await server?.stop();
});

describe("remember and recallContext", () => {
  const path = "projects/memory-os/decisions";
  const content = "We chose Qdrant Edge for the index.";
  let id: string;

  before(async () => {
    const written = await xmemo.remember(content, path, { semantic_key: "decision:index" });
    assert.match(written.id, UUID);
    assert.deepEqual(written, {
      id: written.id,
      memory_id: written.id,
      status: "active",
      version: 1,
      deduplicated: false,
      outcome: "created",
    });
    id = written.id;
  });

  test("the pack holds the remembered memory within the budget", async () => {
    const pack = await xmemo.recallContext("which index did we choose?", {
      max_items: 6,
      max_tokens: 1200,
      path_filter: path,
    });
    assert.deepEqual(
      pack.items.map((item) => [item.id, item.type, item.path, item.shortened]),
      [[id, "semantic", path, false]],
    );
    const item = pack.items[0]!;
    assert.equal(pack.context_text, `[1] ${item.occurred_at.slice(0, 10)} · semantic · ${path}\n${content}\n`);
    assert.deepEqual(pack.budget, {
      max_items: 6,
      max_tokens: 1200,
      used_items: 1,
      used_tokens: item.tokens,
      dropped_items: 0,
      shortened_items: 0,
    });
    assert.ok(pack.budget.used_tokens <= pack.budget.max_tokens);
    assert.equal(pack.query, "which index did we choose?");
    assert.equal(pack.version, "1");
    assert.equal(pack.scope, "");
    assert.deepEqual(pack.retrieval_plan.channels, ["dense", "bm25"]);
    assert.deepEqual(pack.retrieval_plan.candidates, { dense: 1, bm25: 1, union: 1, matched: 1 });
    assert.deepEqual(
      pack.retrieval_plan.items.map((planned) => planned["id"]),
      [id],
    );
  });

  test("a tight token budget shortens the item to fit", async () => {
    const pack = await xmemo.recallContext("which index did we choose?", { max_tokens: 5, path_filter: path });
    assert.deepEqual(
      pack.items.map((item) => [item.id, item.tokens, item.shortened]),
      [[id, 5, true]],
    );
    assert.equal(pack.budget.used_tokens, 5);
    assert.equal(pack.budget.shortened_items, 1);
    assert.ok(content.startsWith(pack.context_text));
  });

  test("no match is an empty pack", async () => {
    const pack = await xmemo.recallContext("zebra migration patterns in Kenya", { path_filter: "nowhere/%" });
    assert.deepEqual(pack.items, []);
    assert.equal(pack.context_text, "");
    assert.deepEqual(pack.budget, {
      max_items: 8,
      max_tokens: 1500,
      used_items: 0,
      used_tokens: 0,
      dropped_items: 0,
      shortened_items: 0,
    });
  });

  test("the same key and content is unchanged", async () => {
    const again = await xmemo.remember(content, path, { semantic_key: "decision:index" });
    assert.deepEqual([again.id, again.outcome, again.version], [id, "unchanged", 1]);
  });
});

describe("search", () => {
  let id: string;

  before(async () => {
    ({ id } = await xmemo.remember("The refund runbook lives in ops/runbooks/refunds.md.", "ops/runbooks"));
    await xmemo.remember("The office plants are watered on Mondays.", "ops/office");
  });

  test("finds the memory that matches, with its fields", async () => {
    const found = await xmemo.search("refund runbook", { path_filter: "ops/%" });
    assert.equal(found.query, "refund runbook");
    assert.equal(found.min_score, 0.35);
    assert.deepEqual(
      found.results.map((hit) => [hit.id, hit.content, hit.path, hit.type, hit.bucket, hit.content_truncated]),
      [[id, "The refund runbook lives in ops/runbooks/refunds.md.", "ops/runbooks", "episodic", "personal", false]],
    );
  });

  test("is strict: a weak match is left out", async () => {
    const found = await xmemo.search("zebra migration in Kenya");
    assert.deepEqual(found.results, []);
  });
});

describe("updateState and timelineEvent", () => {
  test("a state keeps one current version", async () => {
    const first = await xmemo.updateState("deploy.freeze", "Deploys are frozen.");
    const same = await xmemo.updateState("deploy.freeze", "Deploys are frozen.");
    const next = await xmemo.updateState("deploy.freeze", "Deploys are open again.");
    assert.deepEqual([first.outcome, first.version], ["created", 1]);
    assert.deepEqual([same.id, same.outcome, same.version], [first.id, "unchanged", 1]);
    assert.deepEqual([next.outcome, next.version], ["superseded", 2]);
    const current = await xmemo.getMemory(next.id);
    assert.deepEqual(
      [current.type, current.state_key, current.content, current.path, current.status],
      ["working", "deploy.freeze", "Deploys are open again.", "state/deploy.freeze", "active"],
    );
    assert.equal((await xmemo.getMemory(first.id)).status, "superseded");
  });

  test("an event is an episodic memory at its time", async () => {
    const event = await xmemo.timelineEvent("Release 1.2 shipped.", "release", "2026-12-01T10:00:00Z", {
      session_id: "launch",
    });
    assert.equal(event.outcome, "created");
    const stored = await xmemo.getMemory(event.id);
    assert.deepEqual(
      [stored.type, stored.event_type, stored.path, stored.session_id, stored.occurred_at],
      ["episodic", "release", "timeline/release", "launch", "2026-12-01T10:00:00.000000Z"],
    );
  });
});

describe("rememberBatch and listMemories", () => {
  const batch = [
    { content: "Batch one: the queue is Redis.", path: "batch/infra" },
    { content: "Batch two: the cache is Memcached.", path: "batch/infra", importance: 0.8 },
  ];

  test("a batch writes all, and again adds nothing", async () => {
    const written = await xmemo.rememberBatch(batch);
    assert.deepEqual(
      written.map((result) => result.outcome),
      ["created", "created"],
    );
    const again = await xmemo.rememberBatch(batch);
    assert.deepEqual(
      again.map((result) => [result.id, result.outcome]),
      written.map((result) => [result.id, "unchanged"]),
    );
  });

  test("pages follow the cursor to the last", async () => {
    const first = await xmemo.listMemories({ path_prefix: "batch/infra", limit: 1 });
    assert.equal(first.memories.length, 1);
    assert.equal(typeof first.next_cursor, "string");
    const last = await xmemo.listMemories({ path_prefix: "batch/infra", limit: 1, cursor: first.next_cursor! });
    assert.equal(last.next_cursor, null);
    assert.deepEqual(
      [...first.memories, ...last.memories].map((m) => m.content).sort(),
      batch.map((m) => m.content).sort(),
    );
  });

  test("filters by metadata and text", async () => {
    await xmemo.remember("Tagged note for the filter.", "batch/tagged", { metadata: { ticket: "OPS-7" } });
    const page = await xmemo.listMemories({ metadata: "ticket=OPS-7" });
    assert.deepEqual(
      page.memories.map((m) => [m.content, m.metadata]),
      [["Tagged note for the filter.", { ticket: "OPS-7" }]],
    );
    const byText = await xmemo.listMemories({ text: "Memcached" });
    assert.deepEqual(
      byText.memories.map((m) => [m.content, m.importance]),
      [["Batch two: the cache is Memcached.", 0.8]],
    );
  });
});

describe("edit, archive, restore, history and forget", () => {
  test("each change is a version, and forget removes the memory", async () => {
    const { id } = await xmemo.remember("The on-call rota is weekly.", "team/oncall");
    const edited = await xmemo.edit(id, 1, { content: "The on-call rota is fortnightly.", importance: 0.9 });
    assert.deepEqual([edited.version, edited.content, edited.importance], [2, "The on-call rota is fortnightly.", 0.9]);
    assert.deepEqual(await xmemo.archive(id, 2), { id, status: "archived", version: 3 });
    assert.deepEqual(await xmemo.restore(id), { id, status: "active", version: 4 });

    const history = await xmemo.history(id);
    assert.deepEqual(
      history.versions.map((v) => [v.version, v.action]),
      [
        [1, "created"],
        [2, "edit"],
        [3, "archive"],
        [4, "restore"],
      ],
    );
    assert.equal(history.memory.id, id);
    assert.deepEqual(
      history.audit.map((record) => [record.action, record.memory_ids]),
      [
        ["edit", [id]],
        ["archive", [id]],
        ["restore", [id]],
      ],
    );

    const forgotten = await xmemo.forget(id, 4);
    assert.deepEqual(forgotten.forgotten, [id]);
    assert.equal(forgotten.audit_record_ids.length, 1);
    await assert.rejects(xmemo.getMemory(id), NotFoundError);
  });

  test("forgetOwner forgets every memory of another owner", async () => {
    const leaver = await server.createKey("leaver", "memory:read,memory:write");
    const theirs = new XmemoClient(server.url, leaver.key);
    const { id } = await theirs.remember("I am leaving the project.", "notes");
    const forgotten = await xmemo.forgetOwner("leaver");
    assert.deepEqual(forgotten.forgotten, [id]);
    assert.deepEqual((await theirs.listMemories()).memories, []);
  });
});

describe("reflect, audit and health", () => {
  test("a dry run normalises the actions and plans nothing on an empty path", async () => {
    const report = await xmemo.reflect({ dry_run: true, actions_csv: "summary,expiry", path_filter: "nothing/%" });
    assert.equal(report.dry_run, true);
    assert.deepEqual(report.actions, ["summarize", "expire"]);
    assert.deepEqual(report.counts, { summarized: 0, promoted: 0, expired: 0, decayed: 0, archived: 0 });
    assert.deepEqual(report.audit_record_ids, []);
    assert.match(report.plan_digest, /^[0-9a-f]{64}$/);
    assert.equal(report.filters["path_filter"], "nothing/%");
  });

  test("the audit log names the latest change, newest first", async () => {
    const { id } = await xmemo.remember("Audited note.", "audit/check");
    await xmemo.edit(id, 1, { path: "audit/checked" });
    const log = await xmemo.audit({ action: "edit", limit: 1 });
    assert.deepEqual(
      log.records.map((record) => [record.action, record.memory_ids, record.owner_id]),
      [["edit", [id], "admin"]],
    );
    const { path, version } = log.records[0]!.after[id] as { path: string; version: number };
    assert.deepEqual([path, version], ["audit/checked", 2]);
  });

  test("health answers ok", async () => {
    assert.deepEqual(await xmemo.health(), { status: "ok" });
  });
});
