// Packs the npm packages as the release workflow prepares them, for tests
// that install them into a fresh project without network: @okfit/mcp
// (after `napi prepublish -t npm`, which adds this platform's package to
// its optionalDependencies, publishing nothing), @okfit/mcp-linux-x64-gnu
// and @okfit/plugin. Needs scripts/build-node.sh (the addon in
// npm/mcp/npm/linux-x64-gnu, and @napi-rs/cli in npm/mcp/node_modules).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const run = promisify(execFile);
export const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const PLATFORM = "linux-x64-gnu";
const TRIPLE = "x86_64-unknown-linux-gnu";
export const version = JSON.parse(readFileSync(join(repo, "npm", "mcp", "package.json"), "utf8")).version;
// The published files of @okfit/mcp and @okfit/plugin (package.json's "files").
export const MCP_FILES = ["bin/okfit-mcp.js", "index.d.ts", "index.js", "mcp.d.ts", "mcp.js", "mcp.mjs", "package.json"];
export const PLUGIN_FILES = ["bin/okfit-mcp.js", "bin/okfit.js", "package.json"];

/** An npm environment under `work` that never reaches a registry. */
export function offlineEnv(work) {
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: join(work, "home"),
    npm_config_cache: join(work, "npm-cache"),
    npm_config_offline: "true",
    // Nothing listens here: a registry request fails instead of going out.
    npm_config_registry: "http://127.0.0.1:9/",
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    npm_config_audit: "false",
  };
  mkdirSync(env.HOME, { recursive: true });
  return env;
}

/** Packs the three packages into `<work>/packs`; returns npm pack's report per package, with `tgz`. */
export async function packAll(work, env, timings = {}) {
  assert.ok(
    existsSync(join(repo, "npm", "mcp", "npm", PLATFORM, `okfit.${PLATFORM}.node`)),
    "the addon is not built (scripts/build-node.sh)",
  );
  const packs = join(work, "packs");
  mkdirSync(packs, { recursive: true });
  let t = performance.now();
  const stage = join(work, "stage");
  const from = join(repo, "npm", "mcp");
  for (const f of MCP_FILES) cpSync(join(from, f), join(stage, f));
  cpSync(join(from, "npm", PLATFORM), join(stage, "npm", PLATFORM), { recursive: true });
  writeFileSync(join(work, "napi-host.json"), JSON.stringify({ targets: [TRIPLE] }));
  await run(
    join(from, "node_modules", ".bin", "napi"),
    ["prepublish", "-t", "npm", "--skip-optional-publish", "--no-gh-release", "-c", join(work, "napi-host.json")],
    { cwd: stage, env, maxBuffer: 64 * 1024 * 1024 },
  );
  timings.prepublish = performance.now() - t;
  t = performance.now();
  const packed = {};
  const dirs = [["mcp", stage], [`mcp-${PLATFORM}`, join(stage, "npm", PLATFORM)], ["plugin", join(repo, "npm", "plugin")]];
  for (const [name, dir] of dirs) {
    const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", packs], {
      cwd: dir,
      env,
      maxBuffer: 64 * 1024 * 1024,
    });
    const [info] = JSON.parse(stdout);
    packed[name] = { ...info, tgz: join(packs, info.filename) };
    assert.ok(existsSync(packed[name].tgz), `npm pack wrote ${info.filename}`);
  }
  timings.pack = performance.now() - t;
  return packed;
}

/** `npm install --offline` of `tgzs` into a new project at `dir`. */
export async function installInto(dir, tgzs, env) {
  mkdirSync(dir, { recursive: true });
  if (!existsSync(join(dir, "package.json"))) {
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "t", version: "1.0.0", private: true }, null, 2));
  }
  await run("npm", ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", ...tgzs], {
    cwd: dir,
    env,
    maxBuffer: 64 * 1024 * 1024,
  });
}
