// @okfit/mcp (the napi-rs addon) from Node: createMcpServer behind the
// official MCP SDK client over InMemoryTransport in both modes, open()
// round trips, validate(), and the Node bin against the native okfit-mcp
// binary on the same scripted JSON-RPC session.
//
// Needs scripts/build-node.sh (the addon) and cargo build -p okfit (the
// native okfit-mcp and okfit binaries; OKFIT_MCP_BIN overrides okfit-mcp).
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { createInterface } from "node:readline";
import {
  cpSync, mkdtempSync, mkdirSync, rmSync, writeFileSync, readFileSync, existsSync, readdirSync, realpathSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { ACME_MANIFEST, CUSTOMERS, ORDERS } from "./acme.mjs";
import * as esm from "../../npm/mcp/mcp.mjs";
import esmDefault from "../../npm/mcp/mcp.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");
const require = createRequire(import.meta.url);
const okfit = require("../../npm/mcp");
const { createMcpServer, open, validate, OkfitError, Connection, McpServer } = okfit;

const nativeBin = process.env.OKFIT_MCP_BIN ?? join(repo, "target", "debug", "okfit-mcp");
const okfitBin = join(dirname(nativeBin), "okfit");
const nodeBin = join(repo, "npm", "mcp", "bin", "okfit-mcp.js");
const fixture = join(repo, "tests", "fixtures", "mcp", "project");
const NOW = "2026-09-01T00:00:00Z";
const HEX64 = /^[0-9a-f]{64}$/;

const BUNDLE_TOOLS = [
  "describe_vocabulary", "list_concepts", "get_concept", "concept_neighbors", "stale_report", "validate_bundle",
];
const KNOWLEDGE_TOOLS = ["manifest", "search", "get", "snapshot", "write", "delete"];
const DATABASE_TOOLS = ["transact", "history", "restore"];
const TRANSACT_PATTERN_MESSAGE =
  "Input validation error: Invalid arguments for tool transact: Invalid string: must match pattern /^[a-f0-9]{64}$/ at changes[0].replaces";
const ADVICE = /\n\nThis tenant's manifest measures ~\d[\d,]* tokens; (reading it whole is cheaper than searching|prefer "search" over reading it whole)\.$/;

const sha256 = (s) => createHash("sha256").update(s).digest("hex");

let work;
const servers = [];

before(() => {
  assert.ok(
    existsSync(join(repo, "npm", "mcp", "okfit.linux-x64-gnu.node")),
    "the addon is not built (scripts/build-node.sh)",
  );
  assert.ok(existsSync(nativeBin), `okfit-mcp not built at ${nativeBin} (cargo build -p okfit)`);
  work = mkdtempSync(join(tmpdir(), "okfit-napi-"));
});

after(async () => {
  for (const s of servers) await s.close().catch(() => {});
  if (work) rmSync(work, { recursive: true, force: true });
});

/** A fresh copy of the fixture project; returns its absolute path. */
function copyFixture(name) {
  const dir = join(work, name);
  cpSync(fixture, dir, { recursive: true });
  return realpathSync(dir);
}

/** createMcpServer in project mode over `projectDir` (OKFIT_PROJECT_DIR is read at creation). */
function projectServer(projectDir, advice, options) {
  const prev = process.env.OKFIT_PROJECT_DIR;
  process.env.OKFIT_PROJECT_DIR = projectDir;
  try {
    return track(createMcpServer(null, advice, options));
  } finally {
    if (prev === undefined) delete process.env.OKFIT_PROJECT_DIR;
    else process.env.OKFIT_PROJECT_DIR = prev;
  }
}

function track(server) {
  servers.push(server);
  return server;
}

/** An SDK Client connected to `server` over a linked in-memory pair. */
async function connect(server, name = "okfit-napi-test") {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name, version: "0.0.0" });
  await client.connect(clientSide);
  return client;
}

const text = (r) => r.content[0].text;
const names = (tools) => tools.map((t) => t.name);
// A hang is a failure, not a 60 s stall.
const QUICK = { timeout: 10_000 };

test("the CommonJS and ESM entry points export the same functions", () => {
  for (const k of ["createMcpServer", "open", "validate", "McpServer", "Connection", "OkfitError"]) {
    assert.equal(typeof okfit[k], "function", k);
    assert.equal(esm[k], okfit[k], `ESM ${k} is the CommonJS ${k}`);
  }
  assert.equal(esmDefault.createMcpServer, okfit.createMcpServer);
  assert.ok(new OkfitError("x") instanceof Error);
  const e = new OkfitError(`concept already exists\nretry with replaces: "${"a".repeat(64)}"`);
  assert.equal(e.name, "OkfitError");
  assert.equal(e.replaces, "a".repeat(64));
  assert.equal(new OkfitError("no hash here").replaces, undefined);
});

describe("createMcpServer in project mode", () => {
  let project;
  let server;
  let client;

  before(async () => {
    project = copyFixture("project");
    server = projectServer(project);
    assert.ok(server instanceof McpServer);
    client = await connect(server);
  });

  test("initialize names the server; tools/list is the six bundle tools, read-only", async () => {
    assert.equal(client.getServerVersion().name, "okfit");
    assert.match(client.getInstructions() ?? "", /describe_vocabulary/);
    const { tools } = await client.listTools();
    assert.deepEqual(names(tools), BUNDLE_TOOLS);
    for (const t of tools) {
      assert.equal(t.annotations.readOnlyHint, true, t.name);
      assert.equal(t.inputSchema.additionalProperties, false, t.name);
    }
  });

  test("describe_vocabulary resolves the fixture project", async () => {
    const r = await client.callTool({ name: "describe_vocabulary", arguments: {} });
    assert.equal(r.isError, false);
    assert.equal(r.structuredContent.bundle_root, join(project, "bundle"));
    assert.equal(r.structuredContent.agent, "okfit/claude-code");
    assert.ok(r.structuredContent.types.some((t) => t.name === "Dashboard"));
    assert.deepEqual(JSON.parse(text(r)), r.structuredContent);
  });

  test("list_concepts lists and filters", async () => {
    const all = await client.callTool({ name: "list_concepts", arguments: {} });
    assert.equal(all.isError, false);
    assert.equal(all.structuredContent.total, 10);
    const policies = await client.callTool({ name: "list_concepts", arguments: { type: "Policy" } });
    assert.equal(policies.structuredContent.total, 2);
    assert.ok(policies.structuredContent.items.every((c) => c.type === "Policy"));
  });

  test("get_concept takes path ids and short ids", async () => {
    for (const id of ["metrics/revenue", "/metrics/revenue.md", "revenue"]) {
      const r = await client.callTool({ name: "get_concept", arguments: { id } });
      assert.equal(r.isError, false, id);
      assert.equal(r.structuredContent.id, "metrics/revenue");
      assert.equal(r.structuredContent.raw, readFileSync(join(project, "bundle", "metrics", "revenue.md"), "utf8"));
    }
  });

  test("concept_neighbors follows links both ways", async () => {
    const r = await client.callTool({ name: "concept_neighbors", arguments: { id: "metrics/revenue" } });
    assert.equal(r.isError, false);
    assert.ok(r.structuredContent.outgoing.some((n) => n.id === "tables/orders"));
    assert.ok(Array.isArray(r.structuredContent.incoming));
  });

  test("stale_report at a fixed instant", async () => {
    const r = await client.callTool({ name: "stale_report", arguments: { now: NOW } });
    assert.equal(r.isError, false);
    assert.deepEqual(r.structuredContent.items.map((i) => i.summary.id), ["metrics/churn"]);
  });

  test("validate_bundle: the fixture, then an unsaved broken document (never written)", async () => {
    const ok = await client.callTool({ name: "validate_bundle", arguments: { now: NOW } });
    assert.equal(ok.isError, false);
    assert.equal(ok.structuredContent.exit_code, 0);
    assert.equal(ok.structuredContent.summary.lint_warnings, 2);
    const bad = await client.callTool({
      name: "validate_bundle",
      arguments: { now: NOW, documents: [{ path: "metrics/draft.md", text: "---\ntype: [\n---\n# Draft\n" }] },
    });
    assert.equal(bad.structuredContent.exit_code, 2);
    assert.ok(bad.structuredContent.diagnostics.some((d) => d.file === "metrics/draft.md" && d.severity === "error"));
    assert.ok(!existsSync(join(project, "bundle", "metrics", "draft.md")));
  });

  test("refusals: an unknown id is an isError result; bad arguments and unknown tools are -32602", async () => {
    const r = await client.callTool({ name: "get_concept", arguments: { id: "metrics/nope" } });
    assert.equal(r.isError, true);
    assert.match(text(r), /"metrics\/nope"/);
    await assert.rejects(
      client.callTool({ name: "list_concepts", arguments: { nope: 1 } }),
      (e) => e instanceof McpError && e.code === -32602 && /Unrecognized parameter\(s\): nope/.test(e.message),
    );
    for (const name of ["manifest", "write", "transact"]) {
      await assert.rejects(
        client.callTool({ name, arguments: {} }),
        (e) => e instanceof McpError && e.code === -32602 && e.message.includes(`tool not found: ${name}`),
        name,
      );
    }
    // The session survives.
    assert.equal((await client.callTool({ name: "describe_vocabulary", arguments: {} })).isError, false);
  });

  test("resources/read: okf://index, a concept, okf://manifest; unknown resources are -32002", async () => {
    const index = await client.readResource({ uri: "okf://index" }, QUICK);
    assert.equal(index.contents[0].mimeType, "text/markdown");
    assert.equal(index.contents[0].text, readFileSync(join(project, "bundle", "index.md"), "utf8"));
    const concept = await client.readResource({ uri: "okf://concept/metrics/revenue" }, QUICK);
    assert.equal(concept.contents[0].text, readFileSync(join(project, "bundle", "metrics", "revenue.md"), "utf8"));
    const manifest = await client.readResource({ uri: "okf://manifest" }, QUICK);
    assert.equal(manifest.contents[0].mimeType, "text/tab-separated-values");
    const m = manifest.contents[0].text;
    assert.match(m, /^# tenant: bundle\n# bundles: bundle\nid\tbundle\tkind\tstatus\tgrain\tsummary\tlinks\n/);
    assert.equal(m.trimEnd().split("\n").length, 13);
    assert.match(m, /\nrevenue\tbundle\tmetric\t-\t-\tRecognised revenue from completed orders, in USD\.\t/);
    // The same manifest as a folder connection on the bundle.
    const folder = await open(`okf://${join(project, "bundle")}`);
    assert.equal(await folder.manifest(), m);
    await folder.close();
    await assert.rejects(client.readResource({ uri: "okf://concept/metrics/nope" }, QUICK), (e) => e.code === -32002);
    await assert.rejects(client.readResource({ uri: "okf://nope" }, QUICK), (e) => e.code === -32002);
  });

  // After okf://manifest was read (see the first-request test below).
  test("resources/list in project mode: okf://index, one per concept, okf://manifest with the computed advice", async () => {
    const { resources } = await client.listResources(undefined, QUICK);
    assert.equal(resources[0].uri, "okf://index");
    const concepts = resources.filter((r) => r.uri.startsWith("okf://concept/"));
    assert.equal(concepts.length, 10);
    assert.ok(concepts.some((r) => r.uri === "okf://concept/metrics/revenue"));
    const manifest = resources.at(-1);
    assert.equal(manifest.uri, "okf://manifest");
    assert.equal(manifest.mimeType, "text/tab-separated-values");
    assert.match(manifest.description, ADVICE);
  });
});

// Product bug: Server::resources (native/src/mcp/mod.rs) holds the `live`
// lock while manifest_resource() computes the advice; advice() ->
// knowledge() locks `live` again in project mode until the project's
// knowledge has been opened once (by a read of okf://manifest or a
// knowledge tool). So resources/list as the first request never answers:
// createMcpServer has no warm-up, and the native binary's warm-up thread
// only narrows the window.
test("project mode: resources/list as the first request answers", { timeout: 30_000 }, async () => {
  const project = copyFixture("project-first-list");
  const server = projectServer(project);
  const client = await connect(server);
  try {
    const { resources } = await client.listResources(undefined, QUICK);
    assert.equal(resources[0].uri, "okf://index");
    assert.equal(resources.at(-1).uri, "okf://manifest");
    assert.match(resources.at(-1).description, ADVICE);
  } finally {
    await server.close();
  }
});

describe("project mode with an advice override and a tool selection", () => {
  test("resources/list and the okf://manifest description carry the override", async () => {
    const project = copyFixture("project-advice");
    const server = projectServer(project, "Read the whole manifest; it is small.");
    const client = await connect(server);
    assert.deepEqual(names((await client.listTools()).tools), BUNDLE_TOOLS);
    const { resources } = await client.listResources(undefined, QUICK);
    assert.equal(resources[0].uri, "okf://index");
    assert.equal(resources.filter((r) => r.uri.startsWith("okf://concept/")).length, 10);
    const manifest = resources.find((r) => r.uri === "okf://manifest");
    assert.ok(manifest.description.endsWith("\n\nRead the whole manifest; it is small."), manifest.description);
    await server.close();
  });

  test("{tools} picks knowledge tools over the project's bundle; the advice is computed", async () => {
    const project = copyFixture("project-tools");
    const server = projectServer(project, null, { tools: ["list_concepts", "manifest", "get"] });
    const client = await connect(server);
    const { tools } = await client.listTools();
    assert.deepEqual(names(tools).sort(), ["get", "list_concepts", "manifest"]);
    const manifestTool = tools.find((t) => t.name === "manifest");
    assert.match(manifestTool.description, ADVICE);
    const m = await client.callTool({ name: "manifest", arguments: {} });
    assert.equal(m.isError, false);
    assert.match(text(m), /^# tenant: bundle\n/);
    const g = await client.callTool({ name: "get", arguments: { ids: ["revenue", "nope"] } });
    assert.match(text(g), /^@@ revenue\n/);
    assert.match(text(g), /\n@@ missing\nnope$/);
    // With the advice computed by tools/list, resources/list answers too.
    const { resources } = await client.listResources(undefined, QUICK);
    assert.equal(resources.at(-1).description, manifestTool.description);
    await server.close();
  });

  test("database tools need a store; unknown tool names are refused at creation", () => {
    const project = copyFixture("project-db");
    assert.throws(() => projectServer(project, null, { databaseTools: true }), /needs a store connection/);
    assert.throws(() => projectServer(project, null, { tools: ["nope"] }), /unknown tool "nope": expected one of manifest, /);
  });
});

describe("createMcpServer with a store connection", () => {
  let dsn;
  let data;
  let server;
  let client;
  let ordersHash;

  before(async () => {
    data = join(work, "store");
    dsn = `okf://${data}?tenant=acme`;
    server = track(createMcpServer(dsn));
    client = await connect(server);
  });

  test("the six knowledge tools by default; no database tools", async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(names(tools), KNOWLEDGE_TOOLS);
    assert.match(tools[0].description, /before anything else/);
    assert.equal(tools.find((t) => t.name === "delete").annotations.destructiveHint, true);
    assert.match(client.getInstructions() ?? "", /okf:\/\/manifest/);
    for (const name of DATABASE_TOOLS) {
      await assert.rejects(
        client.callTool({ name, arguments: {} }),
        (e) => e instanceof McpError && e.code === -32602 && e.message.includes(`tool not found: ${name}`),
      );
    }
  });

  test("a missing tenant is an isError result; the first write creates it", async () => {
    const m = await client.callTool({ name: "manifest", arguments: {} });
    assert.equal(m.isError, true);
    assert.match(text(m), /no tenant "acme"/);
    assert.ok(!existsSync(join(data, "tenants", "acme")));
    const w = await client.callTool({ name: "write", arguments: { bundle: "sales", path: "tables/orders.md", content: ORDERS } });
    assert.equal(w.isError, false, text(w));
    const hit = /^wrote sales\/tables\/orders\.md \(hash ([0-9a-f]{64})\), snapshot [0-9a-f]{64}, 1 concepts/.exec(text(w));
    assert.ok(hit, text(w));
    ordersHash = hit[1];
    assert.equal(ordersHash, sha256(ORDERS));
    // The validator's findings for the written file ride along.
    assert.match(text(w), /\nwarning tables\/orders\.md: Link target "customers\.md" does not exist/);
    assert.ok(existsSync(join(data, "tenants", "acme")));
  });

  test("a replace without the hash is refused naming it; the retry with it works", async () => {
    const next = ORDERS + "\nMore.\n";
    const r = await client.callTool({ name: "write", arguments: { bundle: "sales", path: "tables/orders.md", content: next } });
    assert.equal(r.isError, true);
    assert.match(text(r), /^concept already exists/);
    const hash = /\nretry with replaces: "([0-9a-f]{64})"$/.exec(text(r))[1];
    assert.equal(hash, ordersHash);
    const ok = await client.callTool({ name: "write", arguments: { bundle: "sales", path: "tables/orders.md", content: next, replaces: hash } });
    assert.equal(ok.isError, false, text(ok));
    // The old hash is stale now: refused, naming the current one.
    const stale = await client.callTool({ name: "write", arguments: { bundle: "sales", path: "tables/orders.md", content: ORDERS, replaces: hash } });
    assert.equal(stale.isError, true);
    assert.ok(text(stale).endsWith(`retry with replaces: "${sha256(next)}"`), text(stale));
    ordersHash = sha256(next);
  });

  test("delete without the hash is refused naming it; with it the concept goes", async () => {
    const w = await client.callTool({ name: "write", arguments: { bundle: "ops", path: "deploy.md", content: "---\ntype: Runbook\n---\n# Deploy\n" } });
    assert.equal(w.isError, false, text(w));
    const r = await client.callTool({ name: "delete", arguments: { bundle: "ops", path: "deploy.md" } });
    assert.equal(r.isError, true);
    assert.match(text(r), /^deleting needs the hash/);
    const hash = /retry with replaces: "([0-9a-f]{64})"/.exec(text(r))[1];
    assert.equal(hash, sha256("---\ntype: Runbook\n---\n# Deploy\n"));
    const d = await client.callTool({ name: "delete", arguments: { bundle: "ops", path: "deploy.md", replaces: hash } });
    assert.equal(d.isError, false, text(d));
    assert.match(text(d), /^deleted ops\/deploy\.md, snapshot [0-9a-f]{64}, 1 concepts$/);
    const gone = await client.callTool({ name: "get", arguments: { ids: ["deploy"] } });
    assert.equal(text(gone), "@@ missing\ndeploy");
  });

  test("manifest, get (batch + missing), search and snapshot read what was written", async () => {
    await client.callTool({ name: "write", arguments: { bundle: "sales", path: "tables/customers.md", content: CUSTOMERS } });
    const m = text(await client.callTool({ name: "manifest", arguments: {} }));
    assert.equal(m, ACME_MANIFEST);
    assert.equal(text(await client.callTool({ name: "manifest", arguments: { bundle: "sales" } })), m);
    const g = text(await client.callTool({ name: "get", arguments: { ids: ["orders", "nope", "customers"], section: "schema" } }));
    assert.match(g, /^@@ orders\n## Schema\n\norder_id, customer_id\n/);
    // A missing section counts as missing, like a missing id.
    assert.match(g, /\n@@ missing\nnope customers$/);
    const all = text(await client.callTool({ name: "get", arguments: { ids: ["customers", "tables/orders.md"] } }));
    assert.match(all, /^@@ customers\n# Customers\n/);
    // Frames name the id as requested.
    assert.match(all, /\n@@ tables\/orders\.md\n# Orders\n/);
    const s = text(await client.callTool({ name: "search", arguments: { query: "churned", k: 1 } }));
    assert.match(s, /# query: churned\n# hits: 1 direct, 0 linked\nid\tbundle\tkind\tstatus\tgrain\tsummary\tlinks\tpos\n/);
    assert.match(s, /\ncustomers\tsales\t/);
    const snap = text(await client.callTool({ name: "snapshot", arguments: {} }));
    assert.match(snap, /^snapshot [0-9a-f]{64}, 2 concepts$/);
    await assert.rejects(
      client.callTool({ name: "search", arguments: { query: "" } }),
      (e) => e instanceof McpError && e.code === -32602,
    );
  });

  test("resources: okf://manifest only; its text is the manifest tool's", async () => {
    const { resources } = await client.listResources(undefined, QUICK);
    assert.deepEqual(resources.map((r) => r.uri), ["okf://manifest"]);
    assert.equal(resources[0].name, "manifest");
    assert.equal(resources[0].mimeType, "text/tab-separated-values");
    const read = await client.readResource({ uri: "okf://manifest" }, QUICK);
    assert.equal(read.contents[0].text, text(await client.callTool({ name: "manifest", arguments: {} })));
    await assert.rejects(client.readResource({ uri: "okf://index" }, QUICK), (e) => e.code === -32002);
  });

  test("without an override the computed advice ends the manifest tool and resource descriptions", async () => {
    // The advice is computed once per server, so this server starts on the filled tenant.
    const s = track(createMcpServer(dsn));
    const c = await connect(s);
    const tool = (await c.listTools()).tools.find((t) => t.name === "manifest");
    assert.match(tool.description, ADVICE);
    assert.ok(tool.description.startsWith("The knowledge manifest: one TSV row per concept"));
    const res = (await c.listResources(undefined, QUICK)).resources[0];
    assert.equal(res.description, tool.description);
    await s.close();
  });

  test("an advice override replaces the computed sentence in the tool and the resource", async () => {
    const advice = "Custom advice: always search first.";
    const s = track(createMcpServer(dsn, advice));
    const c = await connect(s);
    const tool = (await c.listTools()).tools.find((t) => t.name === "manifest");
    assert.ok(tool.description.endsWith(`.\n\n${advice}`), tool.description);
    assert.doesNotMatch(tool.description, /This tenant's manifest measures/);
    const res = (await c.listResources(undefined, QUICK)).resources[0];
    assert.equal(res.description, tool.description);
    await s.close();
  });

  test("{databaseTools: true}: transact (schema, all-or-nothing), history and restore", async () => {
    const s = track(createMcpServer(dsn, null, { databaseTools: true }));
    const c = await connect(s);
    const { tools } = await c.listTools();
    assert.deepEqual(names(tools), [...KNOWLEDGE_TOOLS, ...DATABASE_TOOLS]);
    assert.equal(tools.find((t) => t.name === "history").annotations.readOnlyHint, true);
    assert.equal(tools.find((t) => t.name === "transact").annotations.readOnlyHint, false);
    await assert.rejects(
      c.callTool({ name: "transact", arguments: { changes: [{ operation: "delete", bundle: "sales", path: "tables/orders.md", replaces: "abc" }] } }),
      (e) => {
        assert.ok(e instanceof McpError, String(e));
        assert.equal(e.code, -32602);
        assert.equal(e.message, `MCP error -32602: ${TRANSACT_PATTERN_MESSAGE}`);
        return true;
      },
    );
    const before = text(await c.callTool({ name: "snapshot", arguments: {} }));
    const refused = await c.callTool({ name: "transact", arguments: { changes: [
      { operation: "write", bundle: "ops", path: "deploy.md", content: "# Deploy\n" },
      { operation: "write", bundle: "sales", path: "tables/orders.md", content: "x" },
    ] } });
    assert.equal(refused.isError, true);
    assert.match(text(refused), /concept already exists/);
    assert.equal(text(await c.callTool({ name: "snapshot", arguments: {} })), before);
    const ok = await c.callTool({ name: "transact", arguments: { changes: [
      { operation: "write", bundle: "ops", path: "deploy.md", content: "---\ntype: Runbook\n---\n# Deploy\n" },
      { operation: "delete", bundle: "sales", path: "tables/customers.md", replaces: sha256(CUSTOMERS) },
    ] } });
    assert.equal(ok.isError, false, text(ok));
    const rev = JSON.parse(text(ok));
    assert.match(rev.revision, HEX64);
    assert.equal(rev.concepts, 2);
    assert.deepEqual(rev.bundles, ["ops", "sales"]);

    const h = JSON.parse(text(await c.callTool({ name: "history", arguments: { limit: 2 } })));
    assert.equal(h.revisions.length, 2);
    assert.equal(h.revisions[0].revision, rev.revision);
    assert.ok(h.next);
    const older = JSON.parse(text(await c.callTool({ name: "history", arguments: { limit: 100, before: h.next } })));
    assert.equal(older.revisions[0].revision, h.revisions[1].parent);
    const first = older.revisions.at(-1);
    assert.equal(first.parent, null);
    const wrongHead = await c.callTool({ name: "restore", arguments: { revision: first.revision, expectedRevision: first.revision } });
    assert.equal(wrongHead.isError, true);
    const restored = JSON.parse(text(await c.callTool({ name: "restore", arguments: { revision: first.revision, expectedRevision: rev.revision } })));
    assert.equal(restored.snapshot, first.snapshot);
    assert.equal(restored.concepts, first.concepts);
    const top = JSON.parse(text(await c.callTool({ name: "history", arguments: { limit: 1 } })));
    assert.equal(top.revisions[0].revision, restored.revision);
    assert.equal(top.revisions[0].parent, rev.revision);
    await s.close();
  });

  test("{tools: ['manifest', 'get']} serves exactly those", async () => {
    const s = track(createMcpServer(dsn, null, { tools: ["manifest", "get"] }));
    const c = await connect(s);
    assert.deepEqual(names((await c.listTools()).tools), ["manifest", "get"]);
    assert.equal((await c.callTool({ name: "get", arguments: { ids: ["orders"] } })).isError, false);
    await assert.rejects(c.callTool({ name: "search", arguments: { query: "x" } }), (e) => e.code === -32602);
    await s.close();
  });

  test("{readOnly: true} drops write and delete", async () => {
    const s = track(createMcpServer(dsn, null, { readOnly: true }));
    const c = await connect(s);
    const { tools } = await c.listTools();
    assert.deepEqual(names(tools), ["manifest", "search", "get", "snapshot"]);
    assert.ok(tools.every((t) => t.annotations.readOnlyHint === true));
    await assert.rejects(
      c.callTool({ name: "write", arguments: { bundle: "sales", path: "x.md", content: "# x\n" } }),
      (e) => e.code === -32602 && e.message.includes("tool not found: write"),
    );
    await s.close();
  });

  // Product bug: select_tools (native/src/mcp/mod.rs) filters only the
  // write group under read_only, so transact and restore, which write
  // (readOnlyHint false), stay. SPEC §5: "--read-only removes every tool
  // that writes".
  test("{readOnly: true, databaseTools: true} serves no tool that writes", async () => {
    const s = track(createMcpServer(dsn, null, { readOnly: true, databaseTools: true }));
    const c = await connect(s);
    const { tools } = await c.listTools();
    const writers = tools.filter((t) => t.annotations.readOnlyHint !== true).map((t) => t.name);
    assert.deepEqual(writers, [], `tools that write are still served: ${writers.join(", ")}`);
    assert.deepEqual(names(tools), ["manifest", "search", "get", "snapshot", "history"]);
    await s.close();
  });

  test("a Connection from open() works as the connection argument", async () => {
    const conn = await open(dsn);
    const s = track(createMcpServer(conn));
    const c = await connect(s);
    assert.deepEqual(names((await c.listTools()).tools), KNOWLEDGE_TOOLS);
    assert.equal(
      text(await c.callTool({ name: "snapshot", arguments: {} })),
      await conn.snapshot(),
    );
    await s.close();
    await conn.close();
  });
});

describe("sessions", () => {
  test("two servers and two sessions on one server at once", async () => {
    const projectA = copyFixture("sessions-a");
    const a = projectServer(projectA, "advice A");
    const dsn = `okf://${join(work, "sessions-store")}?tenant=acme`;
    const b = track(createMcpServer(dsn));
    const [ca, cb1, cb2] = await Promise.all([connect(a, "a"), connect(b, "b1"), connect(b, "b2")]);
    const [la, lb1, lb2] = await Promise.all([ca.listTools(), cb1.listTools(), cb2.listTools()]);
    assert.deepEqual(names(la.tools), BUNDLE_TOOLS);
    assert.deepEqual(names(lb1.tools), KNOWLEDGE_TOOLS);
    assert.deepEqual(names(lb2.tools), KNOWLEDGE_TOOLS);
    // Interleaved calls on all three sessions.
    const writes = [];
    for (let i = 0; i < 8; i++) {
      const client = i % 2 ? cb1 : cb2;
      writes.push(client.callTool({ name: "write", arguments: { bundle: "b", path: `c${i}.md`, content: `---\ntype: Note\n---\n# C${i}\n` } }));
      writes.push(ca.callTool({ name: "get_concept", arguments: { id: "revenue" } }));
    }
    const results = await Promise.all(writes);
    assert.ok(results.every((r) => r.isError === false), JSON.stringify(results.filter((r) => r.isError)));
    // A write through one session is seen by the other at once.
    assert.match(text(await cb1.callTool({ name: "snapshot", arguments: {} })), /, 8 concepts$/);
    assert.match(text(await cb2.callTool({ name: "get", arguments: { ids: ["c7"] } })), /^@@ c7\n# C7\n$/);
    // The project server kept its own project directory.
    const v = await ca.callTool({ name: "describe_vocabulary", arguments: {} });
    assert.equal(v.structuredContent.project_root, projectA);
    // Closing one client leaves the other session of the same server working.
    await cb1.close();
    assert.match(text(await cb2.callTool({ name: "snapshot", arguments: {} })), /, 8 concepts$/);
    await a.close();
    await b.close();
  });

  test("McpServer.close() ends every session: the clients' transports close", async () => {
    const s = track(createMcpServer(`okf://${join(work, "close-store")}?tenant=acme`));
    const c1 = await connect(s, "c1");
    const c2 = await connect(s, "c2");
    const closed = [c1, c2].map((c) => new Promise((res) => {
      const prev = c.onclose;
      c.onclose = () => {
        prev?.();
        res(true);
      };
    }));
    assert.deepEqual(names((await c1.listTools()).tools), KNOWLEDGE_TOOLS);
    await s.close();
    const timeout = new Promise((_, rej) => setTimeout(() => rej(new Error("a client transport did not close")), 5000));
    assert.deepEqual(await Promise.race([Promise.all(closed), timeout]), [true, true]);
    await assert.rejects(c1.listTools(undefined, QUICK));
    await assert.rejects(c2.callTool({ name: "snapshot", arguments: {} }, undefined, QUICK));
  });
});

describe("open()", () => {
  test("round trip on a store: every method; refusals are OkfitError with .replaces", async () => {
    const data = join(work, "open-store");
    const dsn = `okf://${data}?tenant=acme`;
    const c = await open(dsn);
    assert.ok(c instanceof Connection);
    assert.equal(c.dsn, dsn);
    await assert.rejects(c.manifest(), (e) => e instanceof OkfitError && /no tenant "acme"/.test(e.message) && e.replaces === undefined);

    const w = await c.write("sales", "tables/orders.md", ORDERS);
    assert.match(w, /^wrote sales\/tables\/orders\.md \(hash [0-9a-f]{64}\), snapshot [0-9a-f]{64}, 1 concepts/);
    const refusal = await c.write("sales", "tables/orders.md", ORDERS + "\nMore.\n").then(
      () => assert.fail("a replace without the hash was accepted"),
      (e) => e,
    );
    assert.ok(refusal instanceof OkfitError);
    assert.equal(refusal.name, "OkfitError");
    assert.match(refusal.message, /^concept already exists/);
    assert.equal(refusal.replaces, sha256(ORDERS));
    assert.match(await c.write("sales", "tables/orders.md", ORDERS + "\nMore.\n", refusal.replaces), /^wrote /);
    await c.write("sales", "tables/customers.md", CUSTOMERS);

    const m = await c.manifest();
    assert.match(m, /^# tenant: acme\n# bundles: sales\n/);
    assert.equal(await c.manifest("sales"), m);
    await assert.rejects(c.manifest("nope"), (e) => e instanceof OkfitError && /no bundle "nope"/.test(e.message));
    const s = await c.search("churned", { k: 1, bundle: "sales" });
    assert.match(s, /# bundle: sales\n# query: churned\n# hits: 1 direct, 0 linked\n/);
    assert.equal(await c.get("orders", { section: "schema" }), "@@ orders\n## Schema\n\norder_id, customer_id\n\nMore.\n");
    const batch = await c.get(["orders", "nope"], { find: "customer", limit: 40 });
    assert.match(batch, /^@@ orders \[\d+\.\.\d+ of \d+\] \d+ match/);
    assert.match(batch, /\n@@ missing\nnope$/);
    assert.match(await c.get(["customers"], { offset: 2, limit: 5 }), /^@@ customers \[2\.\.7 of \d+\]\n/);
    const snap = await c.snapshot();
    assert.match(snap, /^snapshot [0-9a-f]{64}, 2 concepts$/);

    const del = await c.delete("sales", "tables/customers.md").then(() => assert.fail("delete without a hash"), (e) => e);
    assert.ok(del instanceof OkfitError);
    assert.equal(del.replaces, sha256(CUSTOMERS));
    assert.match(await c.delete("sales", "tables/customers.md", del.replaces), /^deleted sales\/tables\/customers\.md, snapshot [0-9a-f]{64}, 1 concepts$/);

    // transact: schema violations are InvalidArg errors; refusals OkfitError; success parsed JSON.
    await assert.rejects(
      c.transact([{ operation: "delete", bundle: "sales", path: "tables/orders.md", replaces: "abc" }]),
      (e) => !(e instanceof OkfitError) && e.code === "InvalidArg" && e.message === TRANSACT_PATTERN_MESSAGE,
    );
    await assert.rejects(c.transact([]), (e) => e.code === "InvalidArg" && /Invalid arguments for tool transact/.test(e.message));
    await assert.rejects(
      c.transact([{ operation: "write", bundle: "sales", path: "tables/orders.md", content: "x" }]),
      (e) => e instanceof OkfitError && /concept already exists/.test(e.message),
    );
    const t = await c.transact([{ operation: "write", bundle: "ops", path: "deploy.md", content: "---\ntype: Runbook\n---\n# Deploy\n" }]);
    assert.match(t.revision, HEX64);
    assert.match(t.snapshot, HEX64);
    assert.equal(t.concepts, 2);
    assert.deepEqual(t.bundles, ["ops", "sales"]);
    assert.ok(Array.isArray(t.diagnostics));
    // expectedRevision: a stale head is refused, the current one accepted.
    await assert.rejects(
      c.transact([{ operation: "write", bundle: "ops", path: "b.md", content: "# B\n" }], "0".repeat(64)),
      (e) => e instanceof OkfitError,
    );
    const t2 = await c.transact([{ operation: "write", bundle: "ops", path: "b.md", content: "---\ntype: Runbook\n---\n# B\n" }], t.revision);
    assert.equal(t2.concepts, 3);

    const h = await c.history({ limit: 2 });
    assert.deepEqual(h.revisions.map((r) => r.revision), [t2.revision, t.revision]);
    assert.equal(h.revisions[0].parent, t.revision);
    for (const r of h.revisions) {
      assert.match(r.created, /^\d{4}-\d\d-\d\dT/);
      assert.match(r.snapshot, HEX64);
    }
    const rest = await c.history({ before: h.next, limit: 100 });
    assert.equal(rest.next, undefined);
    const first = rest.revisions.at(-1);
    assert.equal(first.parent, null);
    assert.equal(first.concepts, 1);
    await assert.rejects(c.restore(first.revision, first.revision), (e) => e instanceof OkfitError && /database changed/.test(e.message));
    const restored = await c.restore(first.revision, t2.revision);
    assert.equal(restored.snapshot, first.snapshot);
    assert.equal(await c.snapshot(), `snapshot ${first.snapshot}, 1 concepts`);

    await c.close();
    await assert.rejects(c.snapshot(), /closed/);
    // A second connection on the same data sees the committed state.
    const again = await open(dsn);
    assert.equal(await again.snapshot(), `snapshot ${first.snapshot}, 1 concepts`);
    await again.close();
  });

  test("round trip on a folder: writes and deletes files, no revisions", async () => {
    const folder = join(work, "open-folder");
    mkdirSync(join(folder, "tables"), { recursive: true });
    writeFileSync(join(folder, "tables", "orders.md"), ORDERS);
    const c = await open(`okf://${folder}`);
    const bundle = "open-folder";
    assert.match(await c.manifest(), new RegExp(`^# tenant: ${bundle}\\n# bundles: ${bundle}\\n`));
    assert.match(await c.snapshot(), /^snapshot [0-9a-f]{64}, 1 concepts$/);

    assert.match(await c.write(bundle, "tables/customers.md", CUSTOMERS), /^wrote open-folder\/tables\/customers\.md \(hash [0-9a-f]{64}\)/);
    assert.equal(readFileSync(join(folder, "tables", "customers.md"), "utf8"), CUSTOMERS);
    const refusal = await c.write(bundle, "tables/orders.md", ORDERS + "\nMore.\n").then(() => assert.fail("replaced without a hash"), (e) => e);
    assert.ok(refusal instanceof OkfitError);
    assert.equal(refusal.replaces, sha256(ORDERS));
    await c.write(bundle, "tables/orders.md", ORDERS + "\nMore.\n", refusal.replaces);
    assert.equal(readFileSync(join(folder, "tables", "orders.md"), "utf8"), ORDERS + "\nMore.\n");
    await assert.rejects(c.write("other", "x.md", "# x\n"), (e) => e instanceof OkfitError && /no bundle "other"/.test(e.message));

    // Edits on disk are seen without reopening.
    writeFileSync(join(folder, "tables", "fresh.md"), "---\ntype: Note\ndescription: Fresh.\n---\n# Fresh\n");
    assert.match(await c.manifest(), /\nfresh\topen-folder\tnote\t-\t-\tFresh\.\t-\n/);
    assert.match(await c.search("churned"), /\ncustomers\topen-folder\t/);
    assert.equal(await c.get(["orders", "nope"], { section: "schema" }), "@@ orders\n## Schema\n\norder_id, customer_id\n\nMore.\n\n@@ missing\nnope");

    const del = await c.delete(bundle, "tables/fresh.md").then(() => assert.fail("deleted without a hash"), (e) => e);
    assert.match(await c.delete(bundle, "tables/fresh.md", del.replaces), /^deleted /);
    assert.ok(!existsSync(join(folder, "tables", "fresh.md")));
    assert.match(await c.snapshot(), /, 2 concepts$/);

    await assert.rejects(c.history(), (e) => e instanceof OkfitError && /needs a store connection/.test(e.message));
    await assert.rejects(
      c.transact([{ operation: "write", bundle, path: "y.md", content: "# y\n" }]),
      (e) => e instanceof OkfitError && /needs a store connection/.test(e.message),
    );
    await assert.rejects(c.restore("a".repeat(64), "b".repeat(64)), (e) => e instanceof OkfitError);
    await c.close();
    assert.deepEqual(readdirSync(join(folder, "tables")).sort(), ["customers.md", "orders.md"]);
  });

  test("bad connection strings reject", async () => {
    await assert.rejects(open("nope://x"), /unsupported dsn scheme/);
    await assert.rejects(open(`okf://${join(work, "no-such-folder")}`), /is not a directory/);
  });
});

describe("validate()", () => {
  test("the fixture project: the okfit validate --format json envelope", async () => {
    const root = copyFixture("validate");
    const report = await validate({ root, now: NOW });
    assert.equal(report.schema, 1);
    assert.equal(report.exit_code, 0);
    assert.equal(report.root, join(root, "bundle"));
    assert.deepEqual(report.summary, {
      conformance_errors: 0, lint_errors: 0, lint_warnings: 2, lint_info: 1, profile_errors: 0, concepts: 10,
    });
    assert.deepEqual(report.diagnostics.map((d) => d.code).sort(), ["broken-links", "log-frontmatter", "stale"]);
    if (existsSync(okfitBin)) {
      const cli = spawnSync(okfitBin, ["validate", root, "--format", "json", "--now", NOW], { encoding: "utf8" });
      assert.equal(cli.status, 0, cli.stderr);
      const expected = JSON.parse(cli.stdout);
      assert.equal(report.producer, "okfit", "the same producer as the CLI");
      assert.deepEqual(report, expected);
    }
  });

  test("an unsaved broken document is overlaid (exit_code 2) and never written", async () => {
    const root = copyFixture("validate-overlay");
    const before = readdirSync(join(root, "bundle", "metrics")).sort();
    const report = await validate({
      root,
      now: NOW,
      documents: [{ path: "metrics/draft.md", text: "---\ntype: [\ntitle: Draft\n---\n# Draft\n" }],
    });
    assert.equal(report.exit_code, 2);
    assert.equal(report.summary.conformance_errors, 1);
    const d = report.diagnostics.find((x) => x.file === "metrics/draft.md");
    assert.equal(d.severity, "error");
    assert.equal(d.code, "frontmatter-unparseable");
    assert.deepEqual(readdirSync(join(root, "bundle", "metrics")).sort(), before);
    // An overlay replacing an existing file fixes its broken link in memory only.
    const churn = readFileSync(join(root, "bundle", "metrics", "churn.md"), "utf8");
    const fixed = await validate({ root, now: NOW, documents: [{ path: "metrics/churn.md", text: churn.replace("does-not-exist.md", "revenue.md") }] });
    assert.ok(!fixed.diagnostics.some((x) => x.code === "broken-links"), JSON.stringify(fixed.diagnostics));
    assert.equal(readFileSync(join(root, "bundle", "metrics", "churn.md"), "utf8"), churn);
  });
});

// ---------------------------------------------------------------------------
// The Node bin against the native binary.

/**
 * Runs one scripted stdio session: every request waits for its answer
 * before the next is sent (as a client would). Resolves with the parsed
 * responses (by order), notifications, stderr and the exit code.
 */
function runScript(cmd, args, { env, cwd }, messages) {
  return new Promise((resolveRun, rejectRun) => {
    const child = spawn(cmd, args, { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
    const responses = [];
    const notifications = [];
    const garbage = [];
    let stderr = "";
    let waiting = null;
    child.stderr.on("data", (d) => (stderr += d.toString()));
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (!line.trim()) return;
      let m;
      try {
        m = JSON.parse(line);
      } catch {
        garbage.push(line);
        return;
      }
      if (m.id === undefined) notifications.push(m);
      else {
        responses.push(m);
        if (waiting && waiting.id === m.id) {
          const w = waiting;
          waiting = null;
          w.resolve();
        }
      }
    });
    const exited = new Promise((res) => child.on("close", (code, signal) => res({ code, signal })));
    (async () => {
      for (const m of messages) {
        const line = JSON.stringify(m) + "\n";
        if (m.id === undefined) {
          child.stdin.write(line);
          continue;
        }
        await new Promise((res, rej) => {
          const timer = setTimeout(() => rej(new Error(`${cmd}: no answer to ${m.method} (id ${m.id}) within 15 s; stderr: ${stderr}`)), 15_000);
          waiting = { id: m.id, resolve: () => { clearTimeout(timer); res(); } };
          child.stdin.write(line);
        });
      }
      child.stdin.end();
      const killer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      const { code, signal } = await exited;
      clearTimeout(killer);
      resolveRun({ responses, notifications, garbage, stderr, code, signal });
    })().catch((e) => {
      child.kill("SIGKILL");
      rejectRun(e);
    });
  });
}

const INIT = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "okfit-script", version: "0.0.0" } };
const call = (id, name, args) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });

const PROJECT_SCRIPT = [
  { jsonrpc: "2.0", id: 1, method: "initialize", params: INIT },
  { jsonrpc: "2.0", method: "notifications/initialized" },
  { jsonrpc: "2.0", id: 2, method: "tools/list" },
  call(3, "describe_vocabulary", {}),
  call(4, "list_concepts", { type: "Metric" }),
  call(5, "get_concept", { id: "revenue" }),
  call(6, "concept_neighbors", { id: "metrics/revenue" }),
  call(7, "stale_report", { now: NOW }),
  call(8, "validate_bundle", { now: NOW, documents: [{ path: "metrics/draft.md", text: "no frontmatter\n" }] }),
  call(9, "get_concept", { id: "metrics/nope" }),
  call(10, "list_concepts", { bogus: 1 }),
  call(11, "write", { bundle: "b", path: "x.md", content: "# x\n" }),
  { jsonrpc: "2.0", id: 12, method: "resources/list" },
  { jsonrpc: "2.0", id: 13, method: "resources/read", params: { uri: "okf://manifest" } },
  { jsonrpc: "2.0", id: 14, method: "resources/read", params: { uri: "okf://concept/metrics/revenue" } },
  { jsonrpc: "2.0", id: 15, method: "resources/read", params: { uri: "okf://nope" } },
  { jsonrpc: "2.0", id: 16, method: "ping" },
];

const STORE_SCRIPT = [
  { jsonrpc: "2.0", id: 1, method: "initialize", params: INIT },
  { jsonrpc: "2.0", method: "notifications/initialized" },
  { jsonrpc: "2.0", id: 2, method: "tools/list" },
  call(3, "manifest", {}),
  call(4, "write", { bundle: "sales", path: "tables/orders.md", content: ORDERS }),
  call(5, "write", { bundle: "sales", path: "tables/orders.md", content: ORDERS + "\nMore.\n" }),
  call(6, "write", { bundle: "sales", path: "tables/orders.md", content: ORDERS + "\nMore.\n", replaces: sha256(ORDERS) }),
  call(7, "write", { bundle: "sales", path: "tables/customers.md", content: CUSTOMERS }),
  call(8, "get", { ids: ["orders", "nope"], section: "schema" }),
  call(9, "search", { query: "churned" }),
  call(10, "snapshot", {}),
  call(11, "delete", { bundle: "sales", path: "tables/customers.md" }),
  call(12, "delete", { bundle: "sales", path: "tables/customers.md", replaces: sha256(CUSTOMERS) }),
  call(13, "manifest", {}),
  call(14, "transact", { changes: [] }),
  call(15, "get", { ids: [] }),
  { jsonrpc: "2.0", id: 16, method: "resources/list" },
  { jsonrpc: "2.0", id: 17, method: "resources/read", params: { uri: "okf://manifest" } },
  { jsonrpc: "2.0", id: 18, method: "resources/read", params: { uri: "okf://index" } },
];

const baseEnv = (home) => ({ PATH: process.env.PATH ?? "", HOME: home });
const bothWays = (args, opts, script) => Promise.all([
  runScript(nativeBin, args, opts, script),
  runScript(process.execPath, [nodeBin, ...args], opts, script),
]);

function assertCleanRun(run, label) {
  assert.deepEqual(run.garbage, [], `${label}: non-JSON-RPC output on stdout`);
  assert.equal(run.code, 0, `${label}: exit code (signal ${run.signal}); stderr: ${run.stderr}`);
}

describe("the Node bin and the native okfit-mcp give the same session", () => {
  test("project mode, one fixture copy", { timeout: 120_000 }, async () => {
    const project = copyFixture("script-project");
    const opts = { env: { ...baseEnv(work), OKFIT_PROJECT_DIR: project }, cwd: work };
    // One after the other on the same copy.
    const native = await runScript(nativeBin, [], opts, PROJECT_SCRIPT);
    const node = await runScript(process.execPath, [nodeBin], opts, PROJECT_SCRIPT);
    assertCleanRun(native, "native");
    assertCleanRun(node, "node");
    const firstLine = `okfit-mcp serving ${join(project, "bundle")} over stdio`;
    assert.equal(native.stderr.split("\n")[0], firstLine);
    assert.equal(node.stderr.split("\n")[0], firstLine);
    assert.equal(node.stderr, native.stderr);
    assert.deepEqual(node.responses, native.responses);
    assert.deepEqual(node.notifications, native.notifications);
    // And the session is what it should be.
    const byId = new Map(native.responses.map((r) => [r.id, r]));
    assert.equal(byId.size, PROJECT_SCRIPT.filter((m) => m.id !== undefined).length);
    assert.equal(byId.get(1).result.serverInfo.name, "okfit");
    assert.deepEqual(byId.get(2).result.tools.map((t) => t.name), BUNDLE_TOOLS);
    assert.equal(byId.get(5).result.structuredContent.id, "metrics/revenue");
    assert.equal(byId.get(8).result.structuredContent.exit_code, 2);
    assert.equal(byId.get(9).result.isError, true);
    assert.equal(byId.get(10).error.code, -32602);
    assert.equal(byId.get(11).error.code, -32602);
    assert.equal(byId.get(12).result.resources.at(-1).uri, "okf://manifest");
    assert.match(byId.get(13).result.contents[0].text, /^# tenant: bundle\n/);
    assert.equal(byId.get(15).error.code, -32002);
    assert.deepEqual(byId.get(16).result, {});
    assert.ok(!existsSync(join(project, "bundle", "metrics", "draft.md")));
  });

  test("a store connection, two identical data directories", { timeout: 120_000 }, async () => {
    const dirs = ["script-store-native", "script-store-node"].map((d) => {
      mkdirSync(join(work, d));
      return join(work, d);
    });
    const args = (d) => [`okf://${d}/data?tenant=acme`];
    const opts = { env: baseEnv(work), cwd: work };
    const [native, node] = await Promise.all([
      runScript(nativeBin, args(dirs[0]), opts, STORE_SCRIPT),
      runScript(process.execPath, [nodeBin, ...args(dirs[1])], opts, STORE_SCRIPT),
    ]);
    assertCleanRun(native, "native");
    assertCleanRun(node, "node");
    const norm = (run, d) => JSON.parse(JSON.stringify(run).split(d).join("<DIR>"));
    const n = norm(native, dirs[0]);
    const j = norm(node, dirs[1]);
    assert.equal(n.stderr.split("\n")[0], "okfit-mcp serving okf://<DIR>/data?tenant=acme over stdio");
    assert.equal(j.stderr.split("\n")[0], n.stderr.split("\n")[0]);
    assert.deepEqual(j.responses, n.responses);
    assert.deepEqual(j.notifications, n.notifications);
    const byId = new Map(n.responses.map((r) => [r.id, r]));
    assert.deepEqual(byId.get(2).result.tools.map((t) => t.name), KNOWLEDGE_TOOLS);
    assert.equal(byId.get(3).result.isError, true);
    assert.equal(byId.get(4).result.isError, false);
    assert.equal(byId.get(5).result.isError, true);
    assert.match(byId.get(5).result.content[0].text, new RegExp(`retry with replaces: "${sha256(ORDERS)}"$`));
    assert.equal(byId.get(6).result.isError, false);
    assert.equal(byId.get(8).result.content[0].text, "@@ orders\n## Schema\n\norder_id, customer_id\n\nMore.\n\n@@ missing\nnope");
    assert.match(byId.get(10).result.content[0].text, /^snapshot [0-9a-f]{64}, 2 concepts$/);
    assert.equal(byId.get(11).result.isError, true);
    assert.equal(byId.get(12).result.isError, false);
    assert.equal(byId.get(14).error.code, -32602);
    assert.equal(byId.get(15).error.code, -32602);
    assert.deepEqual(byId.get(16).result.resources.map((r) => r.uri), ["okf://manifest"]);
    assert.equal(byId.get(17).result.contents[0].text, byId.get(13).result.content[0].text);
    assert.equal(byId.get(18).error.code, -32002);
  });

  test("--version, --help, a bad flag, a bad tool name and a bad connection: same output and exit codes", () => {
    const env = baseEnv(work);
    const cases = [
      ["--version"],
      ["-V"],
      ["--help"],
      ["--bogus"],
      ["--tools", "nope"],
      ["nope://x"],
      [`okf://${join(work, "no-such-folder")}`],
      ["--database-tools"],
    ];
    for (const args of cases) {
      const native = spawnSync(nativeBin, args, { env, cwd: work, encoding: "utf8", input: "" });
      const node = spawnSync(process.execPath, [nodeBin, ...args], { env, cwd: work, encoding: "utf8", input: "" });
      const label = args.join(" ");
      assert.equal(node.status, native.status, `${label}: exit code`);
      assert.equal(node.stdout, native.stdout, `${label}: stdout`);
      assert.equal(node.stderr, native.stderr, `${label}: stderr`);
    }
    const version = spawnSync(nativeBin, ["--version"], { env, encoding: "utf8" });
    assert.equal(version.status, 0);
    assert.match(version.stdout, /^okfit-mcp \d+\.\d+\.\d+ /);
    const bad = spawnSync(nativeBin, ["--bogus"], { env, encoding: "utf8" });
    assert.equal(bad.status, 64);
    assert.equal(bad.stdout, "");
    assert.match(bad.stderr, /--bogus/);
  });
});

describe("McpServer.serveStdio()", () => {
  const serveScript = (dsn, advice, options) => [
    "-e",
    `const { createMcpServer } = require(${JSON.stringify(join(repo, "npm", "mcp"))});
     createMcpServer(${JSON.stringify(dsn)}, ${JSON.stringify(advice)}, ${JSON.stringify(options)}).serveStdio().then((c) => process.exit(c));`,
  ];
  const script = [
    { jsonrpc: "2.0", id: 1, method: "initialize", params: INIT },
    { jsonrpc: "2.0", method: "notifications/initialized" },
    { jsonrpc: "2.0", id: 2, method: "tools/list" },
  ];

  test("project mode: serves stdio as okfit-mcp does", { timeout: 60_000 }, async () => {
    const project = copyFixture("serve-project");
    const run = await runScript(process.execPath, serveScript(null, null, null), { env: { ...baseEnv(work), OKFIT_PROJECT_DIR: project }, cwd: work }, script);
    assertCleanRun(run, "serveStdio");
    assert.equal(run.stderr.split("\n")[0], `okfit-mcp serving ${join(project, "bundle")} over stdio`);
    assert.deepEqual(run.responses[1].result.tools.map((t) => t.name), BUNDLE_TOOLS);
  });

  // Product bug: NativeServer::serve_stdio (napi/src/lib.rs) calls
  // okfit::mcp::serve_stdio(), which serves Options::default() (project
  // mode): the connection, advice and options given to createMcpServer
  // are dropped.
  test("a server created with a connection serves that connection over stdio", { timeout: 60_000 }, async () => {
    const dsn = `okf://${join(work, "serve-store")}?tenant=acme`;
    const empty = join(work, "serve-cwd");
    mkdirSync(empty);
    const run = await runScript(
      process.execPath,
      serveScript(dsn, "Serve advice.", { databaseTools: true }),
      { env: baseEnv(work), cwd: empty },
      script,
    );
    assertCleanRun(run, "serveStdio");
    assert.equal(run.stderr.split("\n")[0], `okfit-mcp serving ${dsn} over stdio`);
    const tools = run.responses[1].result.tools;
    assert.deepEqual(tools.map((t) => t.name), [...KNOWLEDGE_TOOLS, ...DATABASE_TOOLS]);
    assert.ok(tools[0].description.endsWith("\n\nServe advice."));
  });
});
