// MCP over Streamable HTTP from `okfit serve`, driven by the official MCP
// SDK client (StreamableHTTPClientTransport with a bearer token): every
// knowledge and database tool runs, and a scripted session gives the same
// answers over HTTP as the same session over stdio (okfit-mcp on an
// embedded store), revision ids and times aside.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { serve } from "./serve.mjs";
import { CUSTOMERS, ORDERS, connectStdio } from "./acme.mjs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");
const mcpBin = process.env.OKFIT_MCP_BIN ?? join(repo, "target", "debug", "okfit-mcp");
const okfitBin = process.env.OKFIT_BIN ?? join(dirname(mcpBin), "okfit");

let work;
let daemon;
let port;
let token;
let readToken;


const mint = (data, flags) =>
  execFileSync(okfitBin, ["token", "--data", data, "--tenant", "acme", ...flags], {
    stdio: ["ignore", "pipe", "ignore"],
  })
    .toString()
    .trim();

before(async () => {
  assert.ok(existsSync(okfitBin), `okfit not built at ${okfitBin} (cargo build -p okfit)`);
  work = mkdtempSync(join(tmpdir(), "okfit-node-http-"));
  const data = join(work, "served");
  token = mint(data, ["--write", "--database"]);
  readToken = mint(data, []);
  ({ child: daemon, port } = await serve(okfitBin, data, { PATH: process.env.PATH ?? "", HOME: work }));
});

after(async () => {
  daemon?.kill();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** An SDK client over HTTP with `bearer`. */
async function overHttp(bearer) {
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  });
  const client = new Client({ name: "okfit-node-http-test", version: "0.0.0" });
  await client.connect(transport);
  return client;
}

/** An SDK client over stdio: okfit-mcp on an embedded store of its own. */
async function overStdio() {
  const { client } = await connectStdio(
    mcpBin,
    [`okf://${join(work, "embedded")}?tenant=acme`, "--database-tools"],
    { PATH: process.env.PATH ?? "", HOME: work },
    "okfit-node-stdio-test",
  );
  return client;
}


/**
 * A session of every tool: the answers, in order, as [tool, isError, text].
 */
async function session(client) {
  const out = [];
  const call = async (name, args = {}) => {
    const r = await client.callTool({ name, arguments: args });
    const text = r.content[0].text;
    out.push([name, r.isError === true, text]);
    return text;
  };
  await call("manifest");
  await call("write", { bundle: "sales", path: "tables/orders.md", content: ORDERS });
  await call("write", { bundle: "sales", path: "tables/customers.md", content: CUSTOMERS });
  const refusal = await call("write", { bundle: "sales", path: "tables/orders.md", content: ORDERS + "\nMore.\n" });
  const hash = /retry with replaces: "([0-9a-f]{64})"/.exec(refusal)[1];
  await call("write", { bundle: "sales", path: "tables/orders.md", content: ORDERS + "\nMore.\n", replaces: hash });
  await call("manifest");
  await call("manifest", { bundle: "sales" });
  await call("search", { query: "customer order", k: 5 });
  await call("get", { ids: ["orders", "customers"] });
  await call("get", { ids: ["orders"], section: "schema" });
  await call("get", { ids: ["missing"] });
  await call("snapshot");
  await call("transact", {
    changes: [
      { operation: "write", bundle: "ops", path: "runbooks/deploy.md", content: "---\ntype: Runbook\ndescription: How to deploy.\n---\n# Deploy\n\nShip it.\n" },
      { operation: "write", bundle: "ops", path: "runbooks/rollback.md", content: "---\ntype: Runbook\ndescription: How to roll back.\n---\n# Rollback\n\nUndo the [deploy](deploy.md).\n" },
    ],
  });
  const history = JSON.parse(await call("history", { limit: 10 }));
  const first = history.revisions[history.revisions.length - 1].revision;
  await call("restore", { revision: first, expectedRevision: history.revisions[0].revision });
  const unsure = await call("delete", { bundle: "sales", path: "tables/orders.md" });
  const current = /"([0-9a-f]{64})"/.exec(unsure)[1];
  await call("delete", { bundle: "sales", path: "tables/orders.md", replaces: current });
  await call("history", { limit: 3 });
  await call("manifest");
  const uri = await client.readResource({ uri: "okf://manifest" });
  out.push(["okf://manifest", false, uri.contents[0].text]);
  return out;
}

/**
 * `rows` with each revision id (numbered by its place in `revisions`),
 * each time and the data root replaced; history cursors are decoded first,
 * since they carry a revision id.
 */
function normalise(rows, revisions, data) {
  const plain = (text) => {
    let t = text.split(data).join("<data>");
    revisions.forEach((r, i) => (t = t.split(r).join(`<revision ${i}>`)));
    return t.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "<time>");
  };
  return rows.map(([name, isError, text]) => {
    const t = text.replace(
      /"next":"([A-Za-z0-9+/=_-]+)"/g,
      (_, cursor) => `"next":${JSON.stringify(plain(Buffer.from(cursor, "base64").toString()))}`,
    );
    return [name, isError, plain(t)];
  });
}

async function revisionsOf(client) {
  const r = await client.callTool({ name: "history", arguments: { limit: 100 } });
  return JSON.parse(r.content[0].text).revisions.map((x) => x.revision);
}

test("every tool answers over HTTP as over stdio", async () => {
  const http = await overHttp(token);
  const stdio = await overStdio();
  try {
    const { tools } = await http.listTools();
    assert.deepEqual(tools.map((t) => t.name), [
      "manifest", "search", "get", "snapshot", "write", "delete", "transact", "history", "restore",
    ]);
    assert.deepEqual(tools, (await stdio.listTools()).tools.map((t) => ({ ...t })));
    const overHttpRows = await session(http);
    const overStdioRows = await session(stdio);
    const a = normalise(overHttpRows, await revisionsOf(http), join(work, "served"));
    const b = normalise(overStdioRows, await revisionsOf(stdio), join(work, "embedded"));
    assert.equal(a.length, b.length);
    for (let i = 0; i < a.length; i++) {
      assert.deepEqual(a[i], b[i], `answer ${i} (${a[i][0]}) differs`);
    }
    // The session wrote, refused, restored and deleted: not only reads.
    assert.deepEqual(
      a.filter(([, isError]) => isError).map(([name]) => name),
      ["manifest", "write", "delete"],
    );
    assert.match(a.find(([n]) => n === "restore")[2], /^{"revision":"<revision \d+>","snapshot":"[0-9a-f]{64}","concepts":1,/);
  } finally {
    await http.close();
    await stdio.close();
  }
});

test("a read-only token lists the read tools only and cannot write", async () => {
  const http = await overHttp(readToken);
  try {
    const { tools } = await http.listTools();
    assert.deepEqual(tools.map((t) => t.name), ["manifest", "search", "get", "snapshot"]);
    await assert.rejects(
      http.callTool({ name: "write", arguments: { bundle: "b", path: "x.md", content: "# X\n" } }),
      /tool not found: write/,
    );
  } finally {
    await http.close();
  }
});

test("a wrong token is refused before any tool runs", async () => {
  await assert.rejects(overHttp("0".repeat(64)), /401|Unauthorized|invalid or missing bearer token/);
});
