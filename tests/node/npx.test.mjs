// `npx --yes @okfit/mcp` as a user gets it: the packages prepared as the
// release workflow prepares them (`napi prepublish -t npm`, which adds the
// platform packages to @okfit/mcp's optionalDependencies; here for this
// machine's platform only, and publishing nothing), packed with `npm pack`,
// installed into a fresh temporary project without network, then driven
// over stdio by the official MCP SDK client, in project mode and with a
// store connection string.
//
// Needs scripts/build-node.sh (see pack.mjs).
//
// Installing works with both tarballs in one `npm install --offline`: npm
// resolves the optional dependency @okfit/mcp-linux-x64-gnu@<version> to
// the tarball given beside it and never asks the registry (the registry is
// pointed at a closed local port below, so any attempt would fail).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, readFileSync, readdirSync, existsSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { repo, PLATFORM, version, MCP_FILES, offlineEnv, packAll, installInto } from "./pack.mjs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { firstLine } from "./acme.mjs";

const fixture = join(repo, "tests", "fixtures", "mcp", "project");
const nativeBin = process.env.OKFIT_MCP_BIN ?? join(repo, "target", "debug", "okfit-mcp");

const BUNDLE_TOOLS = [
  "describe_vocabulary", "list_concepts", "get_concept", "concept_neighbors", "stale_report", "validate_bundle",
];
const KNOWLEDGE_TOOLS = ["manifest", "search", "get", "snapshot", "write", "delete"];

let work;
let project; // the fresh npm project @okfit/mcp is installed into
let env; // offline npm environment
const packed = {};
const timings = {};

before(async () => {
  work = realpathSync(mkdtempSync(join(tmpdir(), "okfit-npx-")));
  env = offlineEnv(work);
  Object.assign(packed, await packAll(work, env, timings));
  project = join(work, "project");
  const t = performance.now();
  await installInto(project, [packed.mcp.tgz, packed[`mcp-${PLATFORM}`].tgz], env);
  timings.install = performance.now() - t;
}, { timeout: 600_000 });

after(() => {
  if (Object.keys(timings).length) {
    console.log(`# npx.test timings (ms): ${JSON.stringify(Object.fromEntries(Object.entries(timings).map(([k, v]) => [k, Math.round(v)])))}`);
  }
  if (work) rmSync(work, { recursive: true, force: true });
});

test("npm pack ships what the packages declare", () => {
  const files = (dir) => packed[dir].files.map((f) => f.path).sort();
  assert.deepEqual(files("mcp"), MCP_FILES);
  assert.deepEqual(files(`mcp-${PLATFORM}`), ["README.md", `okfit.${PLATFORM}.node`, "package.json"]);
  assert.equal(packed.mcp.name, "@okfit/mcp");
  assert.equal(packed[`mcp-${PLATFORM}`].name, `@okfit/mcp-${PLATFORM}`);
  assert.equal(packed.mcp.version, version);
  assert.equal(packed[`mcp-${PLATFORM}`].version, version);
});

test("both packages are installed, with no install scripts", () => {
  const mcp = JSON.parse(readFileSync(join(project, "node_modules", "@okfit", "mcp", "package.json"), "utf8"));
  const plat = JSON.parse(readFileSync(join(project, "node_modules", "@okfit", `mcp-${PLATFORM}`, "package.json"), "utf8"));
  for (const pkg of [mcp, plat]) {
    for (const hook of ["preinstall", "install", "postinstall", "prepare"]) {
      assert.equal(pkg.scripts?.[hook], undefined, `${pkg.name} has a ${hook} script`);
    }
    assert.notEqual(pkg.gypfile, true, `${pkg.name} would run node-gyp`);
  }
  assert.equal(mcp.optionalDependencies[`@okfit/mcp-${PLATFORM}`], version);
  assert.deepEqual(mcp.bin, { "okfit-mcp": "bin/okfit-mcp.js" });
  assert.ok(existsSync(join(project, "node_modules", ".bin", "okfit-mcp")));
  assert.ok(existsSync(join(project, "node_modules", "@okfit", `mcp-${PLATFORM}`, `okfit.${PLATFORM}.node`)));
  // Nothing else came along.
  assert.deepEqual(readdirSync(join(project, "node_modules", "@okfit")).sort(), ["mcp", `mcp-${PLATFORM}`]);
});

test("require('@okfit/mcp') and import from the temporary project load the installed addon", () => {
  const cjs = spawnSync(process.execPath, ["-e", `
    const m = require('@okfit/mcp');
    const addon = require.resolve('@okfit/mcp-${PLATFORM}');
    const loaded = Object.keys(require.cache).filter((k) => k.endsWith('.node'));
    console.log(JSON.stringify({ keys: Object.keys(m).sort(), addon, loaded }));
  `], { cwd: project, env, encoding: "utf8" });
  assert.equal(cjs.status, 0, cjs.stderr);
  const out = JSON.parse(cjs.stdout);
  for (const k of ["createMcpServer", "open", "validate", "McpServer", "Connection", "OkfitError"]) {
    assert.ok(out.keys.includes(k), k);
  }
  assert.equal(out.addon, join(project, "node_modules", "@okfit", `mcp-${PLATFORM}`, `okfit.${PLATFORM}.node`));
  assert.ok(out.loaded.length === 1 && out.loaded[0].startsWith(join(project, "node_modules")), JSON.stringify(out.loaded));

  const mjs = spawnSync(process.execPath, ["--input-type=module", "-e", `
    import { createMcpServer, validate } from '@okfit/mcp';
    import okfit from '@okfit/mcp';
    console.log(typeof createMcpServer, typeof validate, okfit.createMcpServer === createMcpServer);
  `], { cwd: project, env, encoding: "utf8" });
  assert.equal(mjs.status, 0, mjs.stderr);
  assert.equal(mjs.stdout.trim(), "function function true");
});

/** Connects the SDK client to `npx --yes @okfit/mcp [args]` run in the temporary project. */
async function npxClient(args, extraEnv) {
  let stderr = "";
  const transport = new StdioClientTransport({
    command: "npx",
    args: ["--yes", "@okfit/mcp", ...args],
    cwd: project,
    env: { ...env, ...extraEnv },
    stderr: "pipe",
  });
  transport.stderr?.on("data", (d) => (stderr += d.toString()));
  const client = new Client({ name: "okfit-npx-test", version: "0.0.0" });
  const t = performance.now();
  await client.connect(transport);
  const elapsed = performance.now() - t;
  await firstLine(() => stderr);
  return { client, elapsed, stderr: () => stderr };
}

test("npx --yes @okfit/mcp in project mode serves the six bundle tools", { timeout: 120_000 }, async () => {
  const copy = join(work, "fixture");
  cpSync(fixture, copy, { recursive: true });
  const { client, elapsed, stderr } = await npxClient([], { OKFIT_PROJECT_DIR: copy });
  timings.npxProjectConnect = elapsed;
  try {
    assert.equal(client.getServerVersion().name, "okfit");
    assert.equal(client.getServerVersion().version, version);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), BUNDLE_TOOLS);
    const r = await client.callTool({ name: "list_concepts", arguments: { type: "Policy" } });
    assert.equal(r.isError, false);
    assert.equal(r.structuredContent.total, 2);
    const g = await client.callTool({ name: "get_concept", arguments: { id: "revenue" } });
    assert.equal(g.structuredContent.id, "metrics/revenue");
    assert.equal(stderr().split("\n")[0], `okfit-mcp serving ${join(copy, "bundle")} over stdio`);
  } finally {
    await client.close();
  }
});

test("npx --yes @okfit/mcp with a connection string: write, then manifest", { timeout: 120_000 }, async () => {
  const dsn = `okf://${join(work, "data")}?tenant=acme`;
  const { client, elapsed, stderr } = await npxClient([dsn]);
  timings.npxStoreConnect = elapsed;
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), KNOWLEDGE_TOOLS);
    const w = await client.callTool({
      name: "write",
      arguments: { bundle: "sales", path: "tables/orders.md", content: "---\ntype: BigQuery Table\ndescription: One row per order.\n---\n# Orders\n" },
    });
    assert.equal(w.isError, false, w.content[0].text);
    assert.match(w.content[0].text, /^wrote sales\/tables\/orders\.md \(hash [0-9a-f]{64}\), snapshot [0-9a-f]{64}, 1 concepts/);
    const m = await client.callTool({ name: "manifest", arguments: {} });
    assert.equal(m.isError, false);
    assert.equal(m.content[0].text, [
      "# tenant: acme",
      "# bundles: sales",
      "id\tbundle\tkind\tstatus\tgrain\tsummary\tlinks",
      "orders\tsales\tbigquery_table\t-\t-\tOne row per order.\t-",
      "",
    ].join("\n"));
    assert.ok(existsSync(join(work, "data", "tenants", "acme")));
    assert.equal(stderr().split("\n")[0], `okfit-mcp serving ${dsn} over stdio`);
  } finally {
    await client.close();
  }
});

test("npx --yes @okfit/mcp --version and a bad flag match the native binary", { timeout: 120_000 }, () => {
  for (const args of [["--version"], ["--bogus"]]) {
    const viaNpx = spawnSync("npx", ["--yes", "@okfit/mcp", ...args], { cwd: project, env, encoding: "utf8", input: "" });
    assert.match(viaNpx.stdout + viaNpx.stderr, args[0] === "--version" ? /^okfit-mcp \d/ : /--bogus/);
    if (existsSync(nativeBin)) {
      const native = spawnSync(nativeBin, args, { env, encoding: "utf8", input: "" });
      assert.equal(viaNpx.status, native.status, args.join(" "));
      assert.equal(viaNpx.stdout, native.stdout, args.join(" "));
      assert.equal(viaNpx.stderr, native.stderr, args.join(" "));
    }
  }
});
