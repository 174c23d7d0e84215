/**
 * Builds dist/ from src/: dist/esm for `import` and dist/cjs for `require`, each with its declarations
 * (tsconfig.json and tsconfig.cjs.json), and removes build/ (the tests', rebuilt by `npm test`).
 *
 * `npm run build` runs it, and so does npm's `prepare`: on `npm ci` or `npm install` here, before
 * `npm pack`, and when an app installs this folder (`npm install path/to/clients/typescript`). npm
 * runs a folder's `prepare` without installing the folder's devDependencies first, so with
 * `--prepare`, when TypeScript is not installed here yet, the locked devDependencies are installed
 * (`npm ci --ignore-scripts`, into this folder's node_modules) before the build.
 */

import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(join(PACKAGE_DIR, "package.json"));

/** Run a command in the package folder; exit with its status when it fails. */
function run(command, args, env = process.env) {
  const result = spawnSync(command, args, { cwd: PACKAGE_DIR, env, stdio: "inherit" });
  if (result.error) throw result.error;
  if (result.status !== 0) process.exit(result.status ?? 1);
}

/** tsc of the TypeScript installed in this folder's node_modules; null when there is none. */
function localTsc() {
  try {
    return require.resolve("typescript/bin/tsc");
  } catch {
    return null;
  }
}

/** The installing npm's settings (npm_config_*) that are about the app, not this folder. */
const APP_SETTINGS = new Set(
  [
    "omit", "include", "only", "production", "global", "prefix", "local_prefix", "location",
    "workspace", "workspaces", "include_workspace_root", "package_lock", "package_lock_only",
    "dry_run", "ignore_scripts",
  ].map((name) => `npm_config_${name}`),
);

/**
 * Install this folder's locked devDependencies (TypeScript) with the npm that runs this script. The
 * installing npm's own settings that would leave them out or put them elsewhere (--omit=dev, -g) are
 * not passed on: they are the app's, not this folder's.
 */
function installDevDependencies() {
  console.error("xmemo-client: installing this folder's devDependencies (TypeScript) to build dist/");
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (APP_SETTINGS.has(name.toLowerCase())) delete env[name];
  const npmCli = process.env["npm_execpath"];
  const args = ["ci", "--include=dev", "--ignore-scripts", "--no-audit", "--no-fund"];
  if (npmCli && /\.c?js$/.test(npmCli)) run(process.execPath, [npmCli, ...args], env);
  else run(process.platform === "win32" ? "npm.cmd" : "npm", args, env);
}

let tsc = localTsc();
if (tsc === null && process.argv.includes("--prepare")) {
  installDevDependencies();
  tsc = localTsc();
}
if (tsc === null) {
  console.error("xmemo-client: TypeScript is not installed in this folder: run `npm ci` here, then `npm run build`");
  process.exit(1);
}

for (const dir of ["dist", "build"]) rmSync(join(PACKAGE_DIR, dir), { recursive: true, force: true });
run(process.execPath, [tsc, "-p", "tsconfig.json"]);
run(process.execPath, [tsc, "-p", "tsconfig.cjs.json"]);
// dist/cjs is CommonJS although package.json says "type": "module" for the rest.
mkdirSync(join(PACKAGE_DIR, "dist", "cjs"), { recursive: true });
writeFileSync(join(PACKAGE_DIR, "dist", "cjs", "package.json"), `${JSON.stringify({ type: "commonjs" }, null, 2)}\n`);
