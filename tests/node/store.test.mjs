// okfit-mcp on a store connection, driven by the official MCP SDK client:
// the first write creates the tenant, the knowledge tools read it back,
// the database tools page history and restore.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ACME_MANIFEST, CUSTOMERS, ORDERS, connectStdio } from "./acme.mjs";
import { McpError } from "@modelcontextprotocol/sdk/types.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");
const bin = process.env.OKFIT_MCP_BIN ?? join(repo, "target", "debug", "okfit-mcp");

let work;
let client;
let stderr;
let dsn;

before(async () => {
  assert.ok(existsSync(bin), `okfit-mcp not built at ${bin} (cargo build -p okfit)`);
  work = mkdtempSync(join(tmpdir(), "okfit-node-store-"));
  dsn = `okf://${join(work, "data")}?tenant=acme`;
  ({ client, stderr } = await connectStdio(
    bin,
    [dsn, "--database-tools"],
    { PATH: process.env.PATH ?? "", HOME: work },
    "okfit-node-store-test",
  ));
});

after(async () => {
  await client?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const text = (r) => r.content[0].text;
const call = (name, args = {}) => client.callTool({ name, arguments: args });


test("serves the knowledge and database tools and names the connection", async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), [
    "manifest", "search", "get", "snapshot", "write", "delete", "transact", "history", "restore",
  ]);
  assert.match(tools[0].description, /before anything else/);
  assert.match(stderr(), /^okfit-mcp serving okf:\/\/.*\?tenant=acme over stdio/);
});

test("a missing tenant is a readable error, and the first write creates it", async () => {
  const m = await call("manifest");
  assert.equal(m.isError, true);
  assert.match(text(m), /no tenant "acme"/);
  const w = await call("write", { bundle: "sales", path: "tables/orders.md", content: ORDERS });
  assert.equal(w.isError, false, text(w));
  assert.match(text(w), /^wrote sales\/tables\/orders\.md \(hash [0-9a-f]{64}\), snapshot [0-9a-f]{64}, 1 concepts/);
  assert.ok(existsSync(join(work, "data", "tenants", "acme")));
});

test("a replace needs the hash; the refusal names it", async () => {
  const r = await call("write", { bundle: "sales", path: "tables/orders.md", content: ORDERS + "\nMore.\n" });
  assert.equal(r.isError, true);
  const hash = /retry with replaces: "([0-9a-f]{64})"/.exec(text(r))[1];
  const ok = await call("write", { bundle: "sales", path: "tables/orders.md", content: ORDERS + "\nMore.\n", replaces: hash });
  assert.equal(ok.isError, false, text(ok));
});

test("manifest, resource, search, get and snapshot read what was written", async () => {
  await call("write", { bundle: "sales", path: "tables/customers.md", content: CUSTOMERS });
  const m = text(await call("manifest"));
  assert.equal(m, ACME_MANIFEST);
  const res = await client.readResource({ uri: "okf://manifest" });
  assert.equal(res.contents[0].mimeType, "text/tab-separated-values");
  assert.equal(res.contents[0].text, m);
  const s = text(await call("search", { query: "churned", k: 1 }));
  assert.match(s, /# query: churned\n# hits: 1 direct, 0 linked\n/);
  assert.match(s, /\ncustomers\tsales\t/);
  const g = text(await call("get", { ids: ["orders", "nope"], section: "schema" }));
  assert.equal(g, "@@ orders\n## Schema\n\norder_id, customer_id\n\nMore.\n\n@@ missing\nnope");
  assert.match(text(await call("snapshot")), /^snapshot [0-9a-f]{64}, 2 concepts$/);
});

test("transact validates hashes by schema and commits all or nothing", async () => {
  await assert.rejects(
    call("transact", { changes: [{ operation: "delete", bundle: "sales", path: "tables/orders.md", replaces: "abc" }] }),
    (e) => e instanceof McpError && e.code === -32602 &&
      e.message.includes("Invalid arguments for tool transact: Invalid string: must match pattern /^[a-f0-9]{64}$/ at changes[0].replaces"),
  );
  const before = text(await call("snapshot"));
  const r = await call("transact", { changes: [
    { operation: "write", bundle: "ops", path: "deploy.md", content: "# Deploy\n" },
    { operation: "write", bundle: "sales", path: "tables/orders.md", content: "x" },
  ] });
  assert.equal(r.isError, true);
  assert.match(text(r), /concept already exists/);
  assert.equal(text(await call("snapshot")), before);
});

test("history pages newest first and restore publishes an old state as a new revision", async () => {
  const h = JSON.parse(text(await call("history", { limit: 2 })));
  assert.equal(h.revisions.length, 2);
  assert.ok(h.next);
  const older = JSON.parse(text(await call("history", { limit: 2, before: h.next })));
  assert.equal(older.revisions[0].revision, h.revisions[1].parent);
  const first = older.revisions.at(-1);
  const restored = JSON.parse(text(await call("restore", { revision: first.revision, expectedRevision: h.revisions[0].revision })));
  assert.equal(restored.snapshot, first.snapshot);
  const top = JSON.parse(text(await call("history", { limit: 1 })));
  assert.equal(top.revisions[0].parent, h.revisions[0].revision);
});
