/**
 * A real xmemo server for a test file: the binary of env XMEMO_BIN (default ../../.venv/bin/xmemo,
 * from clients/typescript), on a free loopback port, with a temporary data dir; ready when /readyz
 * answers 200; its admin key read from the data dir; stopped and removed by `stop()`.
 */

import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);

/** clients/typescript, from build/test/server.js. */
const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const READY_WITHIN_MS = 120_000;

export const XMEMO_BIN = resolve(PACKAGE_DIR, process.env["XMEMO_BIN"] ?? "../../.venv/bin/xmemo");

export interface CreatedKey {
  key_id: string;
  key: string;
  owner_id: string;
  scopes: string[];
}

export interface TestServer {
  url: string;
  adminKey: string;
  dataDir: string;
  /** `xmemo keys create --owner OWNER --scopes SCOPES --json` beside the running server. */
  createKey(owner: string, scopes: string): Promise<CreatedKey>;
  stop(): Promise<void>;
}

/** A port nothing listens on now (the kernel's pick, released at once). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  await new Promise<void>((done) => server.close(() => done()));
  if (address === null || typeof address === "string") throw new Error("no port from the kernel");
  return address.port;
}

async function isReady(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) });
    await response.body?.cancel();
    return response.status === 200;
  } catch {
    return false;
  }
}

async function waitUntilReady(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + READY_WITHIN_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the server exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${log()}`);
    }
    if (await isReady(url)) return;
    await new Promise((wake) => setTimeout(wake, 100));
  }
  throw new Error(`the server was not ready within ${READY_WITHIN_MS} ms:\n${log()}`);
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  child.kill("SIGTERM");
  const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(killer);
}

/** Where the model is: the only server settings a test server takes from the caller's environment. */
const INHERITED_SETTINGS = new Set(["XMEMO_EMBEDDING_MODEL", "XMEMO_EMBEDDING_BACKEND", "XMEMO_MODEL_CACHE_DIR"]);

/**
 * The environment of a test server: the caller's, without its other xmemo and Qdrant settings (a
 * database URL or a rate limit there would make the server another one than the tests expect).
 */
function serverEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const kept = Object.entries(process.env).filter(
    ([name]) => !/^(XMEMO_|QDRANT_)/.test(name) || INHERITED_SETTINGS.has(name),
  );
  return { ...Object.fromEntries(kept), ...env };
}

/** Start a server with the defaults; `env` sets settings (XMEMO_RATE_LIMIT_PER_MINUTE, say). */
export async function startServer(env: Record<string, string> = {}): Promise<TestServer> {
  if (!existsSync(XMEMO_BIN)) {
    throw new Error(`no xmemo binary at ${XMEMO_BIN}: set XMEMO_BIN to the server's .venv/bin/xmemo`);
  }
  const dataDir = await mkdtemp(join(tmpdir(), "xmemo-ts-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(XMEMO_BIN, ["--data-dir", dataDir, "serve", "--host", "127.0.0.1", "--port", String(port)], {
    env: serverEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-8_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  try {
    await waitUntilReady(url, child, () => output);
  } catch (error) {
    await stopProcess(child);
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  const adminKey = (await readFile(join(dataDir, "admin.key"), "utf8")).trim();
  return {
    url,
    adminKey,
    dataDir,
    async createKey(owner: string, scopes: string): Promise<CreatedKey> {
      const args = ["--data-dir", dataDir, "keys", "create", "--owner", owner, "--scopes", scopes, "--json"];
      const { stdout } = await run(XMEMO_BIN, args, { env: serverEnv(env) });
      return JSON.parse(stdout) as CreatedKey;
    },
    async stop(): Promise<void> {
      await stopProcess(child);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
