/**
 * The package as an app gets it: this folder, copied without dist/ (as a fresh clone has it), is
 * installed with `npm install <folder>` into a scratch ES module app and a scratch CommonJS app. npm's
 * `prepare` must build dist/; each app then loads it (import, require), compiles against it with
 * TypeScript in its module mode and runs what it compiled; and every `ts` snippet of README.md
 * compiles as written (the AI SDK's against the `ai` devDependency). No server is needed.
 *
 * Offline: the folder's copy borrows this folder's node_modules (TypeScript is there, so `prepare`
 * installs nothing); the apps are compiled by this folder's TypeScript, and their @types/node and `ai`
 * are links to this folder's.
 */

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, lstat, mkdir, mkdtemp, readFile, readlink, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import * as xmemo from "xmemo-client";

/** clients/typescript, from build/test/install.test.js. */
const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const TSC = createRequire(join(PACKAGE_DIR, "package.json")).resolve("typescript/bin/tsc");
/** What a fresh clone lacks: what is built or installed. */
const NOT_IN_A_CLONE = new Set(["node_modules", "dist", "build"]);
/** npm's own settings that a user's install of the app keeps (where the cache and the registry are). */
const USER_SETTINGS = new Set(
  ["cache", "registry", "userconfig", "globalconfig", "cafile", "ca", "cert", "key", "proxy", "https_proxy", "noproxy"]
    .concat(["strict_ssl", "offline"])
    .map((name) => `npm_config_${name}`),
);
const run = promisify(execFile);

/** The client's public runtime names, as this checkout's build gives them (test/exports.test.ts pins the
 * list): an app that installs the folder must see exactly these. */
const RUNTIME_NAMES = Object.keys(xmemo).sort();

/**
 * An app's own code: it makes a client, reads a pack's types and catches an error class, and prints
 * what it got. Compiled in each module mode; it contacts no server.
 */
const APP_SOURCE = `import { type ContextPack, NotFoundError, XmemoClient, XmemoClientError } from "xmemo-client";

const xmemo = new XmemoClient("http://127.0.0.1:8420", "xmk_app_key", { timeoutMs: 5_000 });

export async function contextFor(question: string): Promise<string> {
  const pack: ContextPack = await xmemo.recallContext(question, { max_tokens: 600 });
  return pack.context_text;
}

let refused = "";
try {
  new XmemoClient("http://127.0.0.1:8420", process.env["XMEMO_KEY_THAT_IS_NOT_SET"] ?? "");
} catch (error) {
  refused = error instanceof TypeError ? "TypeError" : String(error);
}
const missing = new NotFoundError(404, "not_found", "no memory");
console.log(JSON.stringify({
  recall: typeof xmemo.recallContext,
  isClientError: missing instanceof XmemoClientError,
  name: missing.name,
  refused,
}));
`;
const APP_OUTPUT = { recall: "function", isClientError: true, name: "NotFoundError", refused: "TypeError" };

/** The compiler options every scratch app shares: strict, as the client's own. */
const STRICT = {
  target: "ES2022",
  lib: ["ES2022"],
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  types: ["node"],
};

let scratch: string;
let clone: string;
let npmEnv: NodeJS.ProcessEnv;

/** Run `command`; its stdout, or a failure that shows both its outputs (tsc reports on stdout). */
async function sh(
  command: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  try {
    const { stdout } = await run(command, args, { cwd, env, maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    const output = `${stdout}\n${stderr}`.trim();
    throw new Error(`${basename(command)} ${args.join(" ")} failed in ${cwd}:\n${output}`, { cause: error });
  }
}

/** npm as the user runs it: the npm running these tests (npm_execpath), else the one on PATH. */
async function npm(args: string[], cwd: string): Promise<string> {
  const npmCli = process.env["npm_execpath"];
  if (npmCli && /\.c?js$/.test(npmCli)) return sh(process.execPath, [npmCli, ...args], cwd, npmEnv);
  return sh(process.platform === "win32" ? "npm.cmd" : "npm", args, cwd, npmEnv);
}

async function tsc(app: string, config: string): Promise<string> {
  return sh(process.execPath, [TSC, "-p", config], app);
}

async function writeJson(path: string, value: unknown): Promise<void> {
  await writeFile(path, `${JSON.stringify(value, null, 2)}\n`);
}

/** Link `node_modules/<name>` of `app` to this folder's installed copy (TypeScript finds its deps there). */
async function linkDevDependency(app: string, name: string): Promise<void> {
  const link = join(app, "node_modules", name);
  await mkdir(dirname(link), { recursive: true });
  await symlink(join(PACKAGE_DIR, "node_modules", name), link, "junction");
}

/** A scratch app of `type` ("module" or "commonjs") with the folder's copy installed by npm. */
async function scratchApp(name: string, type: "module" | "commonjs"): Promise<string> {
  const app = join(scratch, name);
  await mkdir(app);
  await writeJson(join(app, "package.json"), { name, version: "1.0.0", private: true, type });
  // --install-links=false is npm's default since npm 9: the folder is linked, not copied
  await npm(["install", clone, "--install-links=false", "--no-audit", "--no-fund", "--no-update-notifier"], app);
  await linkDevDependency(app, "@types/node");
  await writeFile(join(app, "app.ts"), APP_SOURCE);
  return app;
}

/** `node script` in `app`: what the app printed, as JSON. */
async function runApp(app: string, script: string): Promise<unknown> {
  return JSON.parse(await sh(process.execPath, [script], app)) as unknown;
}

before(async () => {
  npmEnv = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) || USER_SETTINGS.has(name.toLowerCase())),
  );
  scratch = await realpath(await mkdtemp(join(tmpdir(), "xmemo-ts-install-")));
  clone = join(scratch, "xmemo-client");
  await cp(PACKAGE_DIR, clone, {
    recursive: true,
    filter: (source) => dirname(source) !== PACKAGE_DIR || !NOT_IN_A_CLONE.has(basename(source)),
  });
  await symlink(join(PACKAGE_DIR, "node_modules"), join(clone, "node_modules"), "junction");
});

after(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("an ES module app", () => {
  let app: string;

  before(async () => {
    assert.equal(existsSync(join(clone, "dist")), false, "the copy has no dist/, as a fresh clone");
    app = await scratchApp("esm-app", "module");
  });

  test("npm install <folder> links the folder and builds its dist/ (prepare)", async () => {
    const installed = join(app, "node_modules", "xmemo-client");
    assert.ok((await lstat(installed)).isSymbolicLink());
    assert.equal(await realpath(installed), clone, `${installed} -> ${await readlink(installed)}`);
    for (const built of ["esm/index.js", "esm/index.d.ts", "cjs/index.js", "cjs/index.d.ts", "cjs/package.json"]) {
      assert.ok(existsSync(join(clone, "dist", built)), `dist/${built} was not built`);
    }
  });

  test("import gives the ES module build, with every public name", async () => {
    const script = `import * as xmemo from "xmemo-client";
      console.log(JSON.stringify([import.meta.resolve("xmemo-client"), Object.keys(xmemo).sort()]));`;
    const [where, names] = JSON.parse(await sh(process.execPath, ["--input-type=module", "-e", script], app)) as [
      string,
      string[],
    ];
    assert.equal(fileURLToPath(where), join(clone, "dist", "esm", "index.js"));
    assert.deepEqual(names, RUNTIME_NAMES);
  });

  test("TypeScript (module nodenext) compiles an app against it, and the app runs", async () => {
    await writeJson(join(app, "tsconfig.app.json"), {
      compilerOptions: {
        ...STRICT,
        module: "NodeNext",
        moduleResolution: "NodeNext",
        verbatimModuleSyntax: true,
        outDir: "out",
      },
      files: ["app.ts"],
    });
    await tsc(app, "tsconfig.app.json");
    assert.deepEqual(await runApp(app, join("out", "app.js")), APP_OUTPUT);
  });

  test("TypeScript (module preserve, moduleResolution bundler) compiles the app", async () => {
    await writeJson(join(app, "tsconfig.bundler.json"), {
      compilerOptions: { ...STRICT, module: "Preserve", moduleResolution: "Bundler", noEmit: true },
      files: ["app.ts"],
    });
    await tsc(app, "tsconfig.bundler.json");
  });

  test("every ts snippet of the README compiles as written (the AI SDK's against ai 5)", async () => {
    const readme = await readFile(join(PACKAGE_DIR, "README.md"), "utf8");
    const snippets = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
    assert.ok(snippets.length >= 2, `${snippets.length} ts snippets in README.md`);
    assert.ok(snippets.some((snippet) => snippet.includes('from "ai"')), "no AI SDK snippet in README.md");
    const files = snippets.map((_, index) => `readme-${index + 1}.ts`);
    for (const [index, snippet] of snippets.entries()) await writeFile(join(app, files[index]!), snippet);
    // the snippets import the example beside them, as the README says to put it
    await cp(join(PACKAGE_DIR, "examples", "memory-tools.ts"), join(app, "memory-tools.ts"));
    await linkDevDependency(app, "ai");
    const aiVersion = (JSON.parse(await readFile(join(app, "node_modules", "ai", "package.json"), "utf8")) as {
      version: string;
    }).version;
    assert.match(aiVersion, /^5\./);
    await writeJson(join(app, "tsconfig.readme.json"), {
      // skipLibCheck: the `ai` package's own declarations do not check without it (their json-schema has no types)
      compilerOptions: {
        ...STRICT,
        module: "NodeNext",
        moduleResolution: "NodeNext",
        verbatimModuleSyntax: true,
        skipLibCheck: true,
        noEmit: true,
      },
      files: [...files, "memory-tools.ts"],
    });
    await tsc(app, "tsconfig.readme.json");
  });
});

describe("a CommonJS app", () => {
  let app: string;

  before(async () => {
    app = await scratchApp("cjs-app", "commonjs");
  });

  test("require gives the CommonJS build, with every public name", async () => {
    const script = `const xmemo = require("xmemo-client");
      console.log(JSON.stringify([require.resolve("xmemo-client"), Object.keys(xmemo).sort()]));`;
    const [where, names] = JSON.parse(await sh(process.execPath, ["-e", script], app)) as [string, string[]];
    assert.equal(where, join(clone, "dist", "cjs", "index.js"));
    assert.deepEqual(names, RUNTIME_NAMES);
  });

  test("TypeScript (module nodenext, CommonJS) compiles an app against it, and the app runs", async () => {
    await writeJson(join(app, "tsconfig.app.json"), {
      compilerOptions: { ...STRICT, module: "NodeNext", moduleResolution: "NodeNext", outDir: "out" },
      files: ["app.ts"],
    });
    await tsc(app, "tsconfig.app.json");
    const emitted = await readFile(join(app, "out", "app.js"), "utf8");
    assert.match(emitted, /require\("xmemo-client"\)/);
    assert.deepEqual(await runApp(app, join("out", "app.js")), APP_OUTPUT);
  });

  test("TypeScript (module commonjs, the older node10 resolution) compiles the app, and it runs", async () => {
    await writeJson(join(app, "tsconfig.node10.json"), {
      compilerOptions: { ...STRICT, module: "CommonJS", moduleResolution: "Node10", outDir: "out-node10" },
      files: ["app.ts"],
    });
    await tsc(app, "tsconfig.node10.json");
    assert.deepEqual(await runApp(app, join("out-node10", "app.js")), APP_OUTPUT);
  });
});
