/** The example's memory tools work as written: called the way a framework calls a tool, and run as a script. */

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { XmemoClient } from "xmemo-client";

import { NOTHING_RECALLED, recallMemoryTool, rememberTool } from "../examples/memory-tools.js";
import { type TestServer, startServer } from "./server.js";

const BUILD_DIR = join(dirname(fileURLToPath(import.meta.url)), "..");
const EXAMPLE = join(BUILD_DIR, "examples", "memory-tools.js");
const PACKAGE_DIR = join(BUILD_DIR, "..");

let server: TestServer;
let xmemo: XmemoClient;

before(async () => {
  server = await startServer();
  xmemo = new XmemoClient(server.url, server.adminKey);
});

after(async () => {
  await server?.stop();
});

test("a framework calls remember, then recall_memory, with the model's JSON arguments", async () => {
  const remember = rememberTool(xmemo, "agent/payments");
  const recall = recallMemoryTool(xmemo);
  assert.deepEqual([remember.name, recall.name], ["remember", "recall_memory"]);
  assert.deepEqual([remember.inputSchema.required, recall.inputSchema.required], [["content"], ["query"]]);
  const abortSignal = new AbortController().signal;

  const saved = await remember.execute(
    JSON.parse('{"content": "PAY-2291: refunds over 10,000 EUR time out."}') as { content: string },
    { abortSignal },
  );
  const id = /^Remembered \(created\) as ([0-9a-f-]{36})\.$/.exec(saved)?.[1];
  assert.ok(id, saved);

  const recalled = await recall.execute({ query: "What is the status of PAY-2291?" }, { abortSignal });
  const memory = await xmemo.getMemory(id);
  assert.equal(
    recalled,
    `[1] ${memory.occurred_at.slice(0, 10)} · episodic · agent/payments\nPAY-2291: refunds over 10,000 EUR time out.\n`,
  );
});

test("recall_memory says so when nothing matches", async () => {
  const recall = recallMemoryTool(xmemo, { path_filter: "nowhere/%" });
  assert.equal(await recall.execute({ query: "Where is the refund runbook?" }), NOTHING_RECALLED);
});

test("the example runs as a script; run again, it stores nothing new", async () => {
  const own = await server.createKey("script-user", "memory:read,memory:write"); // a store of its own
  const runExample = async (): Promise<string> => {
    const { stdout } = await promisify(execFile)(process.execPath, [EXAMPLE], {
      env: { ...process.env, XMEMO_URL: server.url, XMEMO_API_KEY: own.key },
    });
    return stdout;
  };
  const stdout = await runExample();
  const [saved, ...recalled] = stdout.split("\n");
  const id = /^Remembered \(created\) as ([0-9a-f-]{36})\.$/.exec(saved ?? "")?.[1];
  assert.ok(id, stdout);
  const ownClient = new XmemoClient(server.url, own.key);
  const memory = await ownClient.getMemory(id);
  assert.equal(
    recalled.join("\n"),
    `[1] ${memory.occurred_at.slice(0, 10)} · episodic · agent/notes\nThe refund runbook is in ops/runbooks/refunds.md.\n\n`,
  );

  const again = await runExample(); // the same note: merged into the first (dedupe), not a second copy
  assert.deepEqual(again.split("\n"), [`Remembered (merged) as ${id}.`, ...recalled]);
  const { memories } = await ownClient.listMemories();
  assert.deepEqual(
    memories.map((kept) => [kept.id, kept.status, kept.version]),
    [[id, "active", 2]],
  );
});

test("the repository README's copy of the tool is the example's code", async () => {
  const readme = await readFile(join(PACKAGE_DIR, "..", "..", "README.md"), "utf8");
  const source = await readFile(join(PACKAGE_DIR, "examples", "memory-tools.ts"), "utf8");
  const section = readme.slice(readme.indexOf("## From TypeScript"));
  const copies = [...section.matchAll(/```ts\n(export function [\s\S]*?)```/g)].map((match) => match[1]!);
  assert.equal(copies.length, 1);
  assert.ok(source.includes(copies[0]!), "README.md's recallMemoryTool differs from examples/memory-tools.ts");
});
