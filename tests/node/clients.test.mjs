// Real MCP clients against `okfit serve`'s /mcp with a bearer token: the
// MCP Inspector CLI (`--transport http --header`) lists and calls tools,
// and Claude Code registers the server (`claude mcp add --transport http
// … --header`) and `claude mcp list` reports it connected, offline. Both
// run on Node 22 from the `node` package beside them.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, rmSync, existsSync, writeFileSync } from "node:fs";
import { execFile, execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join, dirname, resolve, delimiter } from "node:path";
import { fileURLToPath } from "node:url";
import { serve } from "./serve.mjs";
import { promisify } from "node:util";

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");
const mcpBin = process.env.OKFIT_MCP_BIN ?? join(repo, "target", "debug", "okfit-mcp");
const okfitBin = process.env.OKFIT_BIN ?? join(dirname(mcpBin), "okfit");
const bin = join(here, "node_modules", ".bin");

let work;
let daemon;
let url;
let token;
let env;


before(async () => {
  assert.ok(existsSync(okfitBin), `okfit not built at ${okfitBin} (cargo build -p okfit)`);
  for (const b of ["node", "mcp-inspector", "claude"]) {
    assert.ok(existsSync(join(bin, b)), `${b} is not installed in tests/node (npm ci)`);
  }
  work = mkdtempSync(join(tmpdir(), "okfit-node-clients-"));
  const data = join(work, "data");
  const bundle = join(work, "bundle", "okf");
  mkdirSync(bundle, { recursive: true });
  writeFileSync(
    join(bundle, "revenue.md"),
    "---\ntype: Metric\ndescription: Revenue recognised per month.\n---\n# Revenue\n\nRecognised when the invoice is paid.\n",
  );
  execFileSync(okfitBin, ["put", join(work, "bundle"), "-c", `okf://${data}?tenant=acme`], { stdio: "ignore" });
  token = execFileSync(okfitBin, ["token", "--data", data, "--tenant", "acme"], {
    stdio: ["ignore", "pipe", "ignore"],
  })
    .toString()
    .trim();
  const home = join(work, "home");
  mkdirSync(home);
  // Node 22 first on the PATH; nothing of the user's own configuration.
  env = {
    PATH: `${bin}${delimiter}${process.env.PATH ?? ""}`,
    HOME: home,
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  };
  let port;
  ({ child: daemon, port } = await serve(okfitBin, data, env));
  url = `http://127.0.0.1:${port}/mcp`;
});

after(() => {
  daemon?.kill();
  if (work) rmSync(work, { recursive: true, force: true });
});

const inspector = (...args) =>
  run(join(bin, "mcp-inspector"), ["--cli", url, "--transport", "http", "--header", `Authorization: Bearer ${token}`, ...args], {
    env,
    cwd: work,
    timeout: 60000,
  });

test("the MCP Inspector CLI lists and calls the tools over HTTP", async () => {
  const listed = JSON.parse((await inspector("--method", "tools/list")).stdout);
  assert.deepEqual(listed.tools.map((t) => t.name), ["manifest", "search", "get", "snapshot"]);
  const found = JSON.parse(
    (await inspector("--method", "tools/call", "--tool-name", "search", "--tool-arg", "query=invoice paid")).stdout,
  );
  assert.equal(found.isError, false);
  assert.match(found.content[0].text, /\nrevenue\tbundle\tmetric\t/);
  const got = JSON.parse(
    (await inspector("--method", "tools/call", "--tool-name", "get", "--tool-arg", 'ids=["revenue"]')).stdout,
  );
  assert.match(got.content[0].text, /Recognised when the invoice is paid\./);
});

test("Claude Code registers the server over HTTP and reports it connected", async () => {
  const project = join(work, "project");
  mkdirSync(project, { recursive: true });
  const claude = (...args) => run(join(bin, "claude"), args, { env, cwd: project, timeout: 90000 });
  await claude("mcp", "add", "--transport", "http", "okfit", url, "--header", `Authorization: Bearer ${token}`);
  await claude("mcp", "add", "--transport", "http", "stranger", url, "--header", "Authorization: Bearer 0123");
  const { stdout } = await claude("mcp", "list");
  assert.match(stdout, new RegExp(`okfit: ${url.replace(/[.]/g, "\\.")} \\(HTTP\\) - ✔ Connected`));
  assert.match(stdout, /stranger: .* - ✘ Failed to connect/);
});
