// okfit-mcp driven by the official MCP TypeScript SDK client over stdio.
// The server binary: OKFIT_MCP_BIN, else target/debug/okfit-mcp.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { connectStdio } from "./acme.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");
const bin = process.env.OKFIT_MCP_BIN ?? join(repo, "target", "debug", "okfit-mcp");
const fixture = join(repo, "tests", "fixtures", "mcp", "project");

let work;
let client;
let stderr;

before(async () => {
  assert.ok(existsSync(bin), `okfit-mcp not built at ${bin} (cargo build -p okfit)`);
  work = mkdtempSync(join(tmpdir(), "okfit-node-"));
  cpSync(fixture, join(work, "project"), { recursive: true });
  ({ client, stderr } = await connectStdio(
    bin,
    [],
    { PATH: process.env.PATH ?? "", HOME: work, OKFIT_PROJECT_DIR: join(work, "project") },
    "okfit-node-test",
  ));
});

after(async () => {
  await client?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const text = (r) => r.content[0].text;

test("initialize names the server and gives instructions", () => {
  assert.equal(client.getServerVersion().name, "okfit");
  assert.match(client.getInstructions() ?? "", /describe_vocabulary/);
  assert.match(stderr(), /^okfit-mcp serving .*project[\\/]bundle over stdio/);
});

test("tools/list has the six bundle tools, read-only, with closed schemas", async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), [
    "describe_vocabulary", "list_concepts", "get_concept",
    "concept_neighbors", "stale_report", "validate_bundle",
  ]);
  for (const t of tools) {
    assert.equal(t.annotations.readOnlyHint, true, t.name);
    assert.equal(t.annotations.idempotentHint, true, t.name);
    assert.equal(t.inputSchema.additionalProperties, false, t.name);
    assert.ok(t.title, t.name);
  }
});

test("list_concepts returns structured content and its JSON text", async () => {
  const r = await client.callTool({ name: "list_concepts", arguments: { type: "Policy" } });
  assert.equal(r.isError, false);
  assert.equal(r.structuredContent.total, 2);
  assert.deepEqual(JSON.parse(text(r)), r.structuredContent);
});

test("get_concept accepts path ids and short ids", async () => {
  for (const id of ["metrics/revenue", "/metrics/revenue.md", "revenue"]) {
    const r = await client.callTool({ name: "get_concept", arguments: { id } });
    assert.equal(r.isError, false, id);
    assert.equal(r.structuredContent.id, "metrics/revenue");
    assert.ok(r.structuredContent.raw.startsWith("---\n"));
  }
});

test("an unknown id is a readable refusal, not a dead connection", async () => {
  const r = await client.callTool({ name: "get_concept", arguments: { id: "metrics/nope" } });
  assert.equal(r.isError, true);
  assert.match(text(r), /"metrics\/nope"/);
  assert.match(text(r), /Try list_concepts\.$/);
  const again = await client.callTool({ name: "describe_vocabulary", arguments: {} });
  assert.equal(again.isError, false);
});

test("unknown argument keys are refused with -32602 naming them", async () => {
  await assert.rejects(
    client.callTool({ name: "list_concepts", arguments: { nope: 1, alsonope: 2 } }),
    (e) => e.code === -32602 && /Unrecognized parameter\(s\): nope, alsonope/.test(e.message),
  );
});

test("validate_bundle checks unsaved text without writing it", async () => {
  const r = await client.callTool({
    name: "validate_bundle",
    arguments: { now: "2026-09-01T00:00:00Z", documents: [{ path: "metrics/draft.md", text: "no frontmatter\n" }] },
  });
  assert.equal(r.isError, false);
  assert.equal(r.structuredContent.exit_code, 2);
  assert.equal(r.structuredContent.producer, "@okfit/mcp");
  assert.ok(!existsSync(join(work, "project", "bundle", "metrics", "draft.md")));
});

test("resources: the index, one per concept and the manifest, live", async () => {
  const { resources } = await client.listResources();
  assert.equal(resources[0].uri, "okf://index");
  const manifest = resources.find((r) => r.uri === "okf://manifest");
  assert.equal(manifest.mimeType, "text/tab-separated-values");
  assert.ok(resources.filter((r) => r !== manifest).every((r) => r.mimeType === "text/markdown"));
  const before = resources.length;
  writeFileSync(join(work, "project", "bundle", "metrics", "fresh.md"), "---\ntype: Metric\ntitle: Fresh\n---\n# Fresh\n");
  const after = (await client.listResources()).resources;
  assert.equal(after.length, before + 1);
  const read = await client.readResource({ uri: "okf://concept/metrics/fresh" });
  assert.equal(read.contents[0].mimeType, "text/markdown");
  assert.match(read.contents[0].text, /title: Fresh/);
});
