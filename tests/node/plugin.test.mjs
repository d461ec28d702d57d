// The Claude Code plugin (plugins/claude-code) with the real Claude Code
// CLI, offline, on Node 22 (both from tests/node's npm packages):
// `claude plugin validate` on the plugin and the repository's
// marketplace, the plugin's MCP server connected under `--plugin-dir` and
// when installed from the local marketplace, the hook scripts fed the JSON
// Claude Code sends, the MCP loader's choices and package-manager advice,
// and @okfit/plugin packed and installed into a project (its `okfit`
// naming itself in `--version`, its bins found by the plugin's scripts).
//
// Needs cargo build -p okfit (target/debug/okfit and okfit-mcp; OKFIT_BIN
// and OKFIT_MCP_BIN override them) and scripts/build-node.sh.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { promisify } from "node:util";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { repo, PLATFORM, PLUGIN_FILES, version, offlineEnv, packAll, installInto } from "./pack.mjs";

const run = promisify(execFile);
const plugin = join(repo, "plugins", "claude-code");
const bin = join(repo, "tests", "node", "node_modules", ".bin");
const mcpBin = process.env.OKFIT_MCP_BIN ?? join(repo, "target", "debug", "okfit-mcp");
const okfitBin = process.env.OKFIT_BIN ?? join(dirname(mcpBin), "okfit");

let work;
let home;
let toolsDir; // okfit and okfit-mcp only, for PATH
let shBin; // sh, sed, head, cat, dirname only: a PATH with no okfit, npx or node

before(() => {
  assert.ok(existsSync(okfitBin), `okfit not built at ${okfitBin} (cargo build -p okfit)`);
  assert.ok(existsSync(join(bin, "claude")), "claude is not installed in tests/node (npm ci)");
  work = realpathSync(mkdtempSync(join(tmpdir(), "okfit-plugin-")));
  home = join(work, "home");
  mkdirSync(home);
  toolsDir = join(work, "tools");
  mkdirSync(toolsDir);
  for (const b of [okfitBin, mcpBin]) cpSync(b, join(toolsDir, b.split("/").pop()));
  shBin = join(work, "shbin");
  mkdirSync(shBin);
  for (const tool of ["sh", "sed", "head", "cat", "dirname"]) {
    const found = spawnSync("sh", ["-c", `command -v ${tool}`], { encoding: "utf8" }).stdout.trim();
    assert.ok(found, `${tool} is on PATH`);
    cpSync(found, join(shBin, tool));
  }
});

after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** A project with a small bundle, okfit config included. */
function project(name, cfg = "[bundle]\nprofile = \"none\"\n") {
  const dir = join(work, name);
  mkdirSync(join(dir, "okf"), { recursive: true });
  writeFileSync(join(dir, "okfit.toml"), cfg);
  writeFileSync(join(dir, "okf", "index.md"), "# Note\n\n* [Good](good.md) - A good note.\n");
  writeFileSync(join(dir, "okf", "good.md"), "---\ntype: Note\ntitle: Good\ndescription: A good note.\n---\n\n# Good\n\nFine.\n");
  return dir;
}

/** Claude Code, offline, with a scratch HOME; `path` is prepended to PATH. */
function claudeEnv(path = []) {
  return {
    PATH: [bin, ...path, process.env.PATH ?? ""].join(delimiter),
    HOME: home,
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  };
}

const claude = (args, opts) => run(join(bin, "claude"), args, { timeout: 90_000, ...opts });

test("claude plugin validate passes on the plugin and on the marketplace", async () => {
  const env = claudeEnv();
  const p = await claude(["plugin", "validate", plugin], { env, cwd: work });
  assert.match(p.stdout, /✔ Validation passed/);
  assert.match(p.stdout, /mcpServers: okfit stdio sh/);
  assert.match(p.stdout, /hooks: SessionStart command/);
  assert.match(p.stdout, /hooks: PostToolUse Write\|Edit command/);
  assert.match(p.stdout, /skills: okfit:okf-authoring/);
  assert.match(p.stdout, /skills: okfit:okf-spec/);
  const m = await claude(["plugin", "validate", repo], { env, cwd: work });
  assert.match(m.stdout, /marketplace\.json/);
  assert.match(m.stdout, /✔ Validation passed/);
});

test("with --plugin-dir, claude mcp list shows the plugin's server connected", async () => {
  const dir = project("plugin-dir");
  const { stdout } = await claude(["--plugin-dir", plugin, "mcp", "list"], { env: claudeEnv([toolsDir]), cwd: dir });
  assert.match(stdout, /plugin:okfit:okfit: sh .*start-mcp\.sh - ✔ Connected/);
});

test("installed from the repository's marketplace, the plugin's server connects", async () => {
  const dir = project("marketplace");
  const env = claudeEnv([toolsDir]);
  await claude(["plugin", "marketplace", "add", repo], { env, cwd: dir });
  const installed = await claude(["plugin", "install", "okfit@okfit"], { env, cwd: dir });
  assert.match(installed.stdout, /okfit/);
  const { stdout } = await claude(["mcp", "list"], { env, cwd: dir });
  assert.match(stdout, /plugin:okfit:okfit: .* - ✔ Connected/);
  await claude(["plugin", "uninstall", "okfit@okfit"], { env, cwd: dir });
});

/** Runs a plugin script with `input` on stdin in a clean environment. */
function script(rel, input, env, cwd) {
  return spawnSync("sh", [join(plugin, rel)], { input, env: { HOME: home, ...env }, cwd, encoding: "utf8" });
}

function postToolUse(dir, tool, file) {
  return JSON.stringify({
    session_id: "s",
    transcript_path: join(work, "t.jsonl"),
    cwd: dir,
    hook_event_name: "PostToolUse",
    tool_name: tool,
    tool_input: { file_path: file, content: "" },
    tool_response: { success: true },
  });
}

test("the PostToolUse hook blocks on conformance errors and is silent on a clean concept", () => {
  const dir = project("hooks");
  const bad = join(dir, "okf", "bad.md");
  writeFileSync(bad, "---\ntitle: Bad\n---\n# Bad\n");
  const env = { PATH: `${toolsDir}${delimiter}${shBin}`, CLAUDE_PROJECT_DIR: dir };
  const r = script("hooks/post-tool-use.sh", postToolUse(dir, "Write", bad), env, dir);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), {
    decision: "block",
    reason: "bad.md: 1 conformance error(s) — fix before continuing:\n  type-missing: `type` must be a non-empty string",
  });
  const clean = script("hooks/post-tool-use.sh", postToolUse(dir, "Edit", join(dir, "okf", "good.md")), env, dir);
  assert.equal(clean.status, 0, clean.stderr);
  assert.equal(clean.stdout, "");
  assert.equal(clean.stderr, "");
  const outside = script("hooks/post-tool-use.sh", postToolUse(dir, "Write", join(dir, "okfit.toml")), env, dir);
  assert.equal(outside.stdout, "");
  // OKFIT_CLI_CMD names the command line to use.
  const viaCmd = script("hooks/post-tool-use.sh", postToolUse(dir, "Write", bad), { PATH: shBin, CLAUDE_PROJECT_DIR: dir, OKFIT_CLI_CMD: okfitBin }, dir);
  assert.equal(JSON.parse(viaCmd.stdout).decision, "block");
});

test("the SessionStart hook answers with the bundle's orientation", () => {
  const dir = project("session", "[bundle]\nprofile = \"software-project\"\n");
  const env = { PATH: `${toolsDir}${delimiter}${shBin}`, CLAUDE_PROJECT_DIR: dir };
  const r = script("hooks/session-start.sh", JSON.stringify({ hook_event_name: "SessionStart", source: "startup", cwd: dir }), env, dir);
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout).hookSpecificOutput;
  assert.equal(out.hookEventName, "SessionStart");
  assert.match(out.additionalContext, /in okf\/, profile software-project, config okfit\.toml\./);
  assert.match(out.additionalContext, /\* \[Good\]\(good\.md\) - A good note\./);
});

test("each kill switch turns its hook off", () => {
  const dir = project("killed");
  const bad = join(dir, "okf", "bad.md");
  writeFileSync(bad, "---\ntitle: Bad\n---\n");
  const base = { PATH: `${toolsDir}${delimiter}${shBin}`, CLAUDE_PROJECT_DIR: dir };
  const event = postToolUse(dir, "Write", bad);
  for (const [rel, off] of [
    ["hooks/post-tool-use.sh", { OKFIT_HOOKS: "off" }],
    ["hooks/post-tool-use.sh", { OKFIT_VALIDATE_HOOK: "off" }],
    ["hooks/session-start.sh", { OKFIT_HOOKS: "off" }],
    ["hooks/session-start.sh", { OKFIT_SESSION_HOOK: "off" }],
  ]) {
    const r = script(rel, event, { ...base, ...off }, dir);
    assert.equal(r.status, 0, `${rel} ${JSON.stringify(off)}`);
    assert.equal(r.stdout, "", `${rel} ${JSON.stringify(off)}`);
    assert.equal(r.stderr, "", `${rel} ${JSON.stringify(off)}`);
  }
  // The other switch leaves a hook on.
  const on = script("hooks/post-tool-use.sh", event, { ...base, OKFIT_SESSION_HOOK: "off" }, dir);
  assert.equal(JSON.parse(on.stdout).decision, "block");
});

test("without okfit, each hook says so in one line and exits 0", () => {
  const dir = project("no-okfit");
  const env = { PATH: shBin, CLAUDE_PROJECT_DIR: dir };
  for (const [rel, what] of [["hooks/post-tool-use.sh", "checking the written file was skipped"], ["hooks/session-start.sh", "the session-start orientation was skipped"]]) {
    const r = script(rel, postToolUse(dir, "Write", join(dir, "okf", "good.md")), env, dir);
    assert.equal(r.status, 0);
    assert.equal(r.stdout, "");
    const lines = r.stderr.trimEnd().split("\n");
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], /^okfit plugin: the okfit command line is not installed \(npm install --save-dev @okfit\/plugin, or put okfit on PATH\); /);
    assert.ok(lines[0].endsWith(`${what}.`), lines[0]);
  }
});

/** A stub command that prints its name and arguments. */
function stub(dir, name) {
  mkdirSync(dir, { recursive: true });
  const p = join(dir, name);
  writeFileSync(p, `#!/bin/sh\necho "${name} $*"\n`);
  chmodSync(p, 0o755);
  return p;
}

function loader(dir, path) {
  return spawnSync("sh", [join(plugin, "bin", "start-mcp.sh"), "--flag"], {
    env: { HOME: home, PATH: path, CLAUDE_PROJECT_DIR: dir },
    cwd: dir,
    encoding: "utf8",
  });
}

test("the MCP loader prefers the project's install, then PATH", () => {
  const dir = join(work, "loader-project");
  stub(join(dir, "node_modules", ".bin"), "okfit-mcp");
  const onPath = join(work, "loader-path");
  stub(onPath, "okfit-mcp");
  const r = loader(dir, `${onPath}${delimiter}${shBin}`);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout, "okfit-mcp --flag\n");
  assert.equal(r.stderr, "");
  const bare = join(work, "loader-bare");
  mkdirSync(bare);
  const p = loader(bare, `${onPath}${delimiter}${shBin}`);
  assert.equal(p.stdout, "okfit-mcp --flag\n");
  assert.equal(p.stderr, "");
});

test("without an install, the loader explains, names the package manager, then runs npx", () => {
  const npxDir = join(work, "npx-stub");
  stub(npxDir, "npx");
  const cases = [
    ["npm", { "package-lock.json": "{}" }, "npm install --save-dev @okfit/plugin"],
    ["pnpm", { "pnpm-lock.yaml": "" }, "pnpm add -D @okfit/plugin"],
    ["yarn", { "yarn.lock": "" }, "yarn add -D @okfit/plugin"],
    ["bun", { "bun.lockb": "" }, "bun add -d @okfit/plugin"],
    ["bun", { "bun.lock": "" }, "bun add -d @okfit/plugin"],
    // packageManager wins over a lockfile.
    ["pnpm", { "package.json": '{\n  "name": "x",\n  "packageManager": "pnpm@9.1.0"\n}\n', "yarn.lock": "" }, "pnpm add -D @okfit/plugin"],
    ["npm", {}, "npm install --save-dev @okfit/plugin"],
  ];
  for (const [i, [pm, files, install]] of cases.entries()) {
    const dir = join(work, `pm-${i}-${pm}`);
    mkdirSync(dir);
    for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text);
    const r = loader(dir, `${npxDir}${delimiter}${shBin}`);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, "npx --yes @okfit/mcp --flag\n", pm);
    assert.equal(
      r.stderr,
      [
        "okfit plugin: okfit-mcp is not installed in this project.",
        "",
        `Detected package manager: ${pm}`,
        `Project directory: ${dir}`,
        "",
        "Install it with:",
        `  ${install}`,
        "",
        "Falling back to `npx --yes @okfit/mcp`, which will download it.",
        "",
      ].join("\n"),
      JSON.stringify(files),
    );
  }
});

test("@okfit/plugin installs okfit and okfit-mcp into the project, and the plugin uses them", { timeout: 600_000 }, async () => {
  const npmWork = join(work, "npm");
  const env = offlineEnv(npmWork);
  const packed = await packAll(npmWork, env);
  assert.equal(packed.plugin.name, "@okfit/plugin");
  assert.equal(packed.plugin.version, version);
  assert.deepEqual(packed.plugin.files.map((f) => f.path).sort(), PLUGIN_FILES);
  const dir = project("installed");
  await installInto(dir, [packed.plugin.tgz, packed.mcp.tgz, packed[`mcp-${PLATFORM}`].tgz], env);
  const dotBin = join(dir, "node_modules", ".bin");
  const v = spawnSync(join(dotBin, "okfit"), ["--version"], { env, encoding: "utf8" });
  assert.equal(v.status, 0, v.stderr);
  assert.match(v.stdout, new RegExp(`^okfit ${version.replace(/\./g, "\\.")} via @okfit/plugin ${version.replace(/\./g, "\\.")} \\(engine `));
  const ctx = spawnSync(join(dotBin, "okfit"), ["context", "--format", "json"], { env, cwd: dir, encoding: "utf8" });
  assert.deepEqual(JSON.parse(ctx.stdout).distribution, { name: "@okfit/plugin", version });
  const mv = spawnSync(join(dotBin, "okfit-mcp"), ["--version"], { env, encoding: "utf8" });
  assert.match(mv.stdout, /^okfit-mcp /);
  // The hook finds the project's okfit (node on PATH, no okfit there).
  const bad = join(dir, "okf", "bad.md");
  writeFileSync(bad, "---\ntitle: Bad\n---\n");
  const nodeDir = dirname(process.execPath);
  const r = script("hooks/post-tool-use.sh", postToolUse(dir, "Write", bad), { PATH: `${nodeDir}${delimiter}${shBin}`, CLAUDE_PROJECT_DIR: dir }, dir);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).decision, "block");
  rmSync(bad);
  // Claude Code starts the project's okfit-mcp through the loader.
  const { stdout } = await claude(["--plugin-dir", plugin, "mcp", "list"], { env: claudeEnv(), cwd: dir });
  assert.match(stdout, /plugin:okfit:okfit: .* - ✔ Connected/);
});
