// Hostile JSON-RPC through @okfit/mcp: createMcpServer over an SDK
// transport, and the Node bin over stdio. Every request gets exactly one
// answer carrying its id; nothing is written; the server keeps serving.
//
// Needs scripts/build-node.sh (the addon).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, existsSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");
const require = createRequire(import.meta.url);
const { createMcpServer } = require("../../npm/mcp");
const nodeBin = join(repo, "npm", "mcp", "bin", "okfit-mcp.js");
const DOC = "---\ntype: note\ndescription: A note.\n---\n# Note\n";

let work;
before(() => {
  assert.ok(
    existsSync(join(repo, "npm", "mcp", "okfit.linux-x64-gnu.node")),
    "the addon is not built (scripts/build-node.sh)",
  );
  work = mkdtempSync(join(tmpdir(), "okfit-adversarial-"));
});
after(() => rmSync(work, { recursive: true, force: true }));

const call = (id, name, args) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });

/** `[message, id, code]`: objects an SDK transport can carry. */
function hostile() {
  return [
    [call(900001, "write", { bundle: "b", path: "a.md", content: "bad \ud800 surrogate" }), 900001, -32602],
    [call("lo", "transact", { changes: [{ operation: "write", bundle: "b", path: "a.md", content: "\udc00" }] }), "lo", -32602],
    [call(3, "transact", { changes: [{ operation: "write", bundle: "b", path: "a.md", content: "a".repeat(17 * 1024 * 1024) }] }), 3, -32600],
    [call(4, "search", { query: "x", k: 1e12 }), 4, -32602],
    [call(5, "search", { query: 5 }), 5, -32602],
    [call(6, "get", { ids: [1, 2] }), 6, -32602],
    [call(7, "write", { bundle: 5, path: "a.md", content: "x" }), 7, -32602],
    [{ jsonrpc: "2.0", id: 8, method: "tools/call", params: { name: 5 } }, 8, -32602],
    [{ jsonrpc: "2.0", id: 9, method: "tools/call", params: "write" }, 9, -32602],
    [{ jsonrpc: "2.0", id: 10, method: 5 }, 10, -32600],
    [{ jsonrpc: "2.0", id: 11, method: "no/such/method" }, 11, -32601],
  ];
}

const INIT = {
  jsonrpc: "2.0", id: "init", method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "adversary", version: "1" } },
};

/** Messages from the server as they arrive; `next()` waits for one (and
 *  fails after a minute: a request went unanswered). */
function inbox() {
  const queue = [];
  let wake = null;
  return {
    push(m) {
      queue.push(m);
      if (wake) wake();
    },
    async next() {
      const deadline = Date.now() + 60_000;
      while (queue.length === 0) {
        assert.ok(Date.now() < deadline, "a request went unanswered");
        await new Promise((r) => { wake = r; setTimeout(r, 100); });
      }
      return queue.shift();
    },
    get size() {
      return queue.length;
    },
  };
}

/** Error code of an answer; a tool's own refusal counts as -32602. */
const codeOf = (a) => a.error?.code ?? (a.result?.isError ? -32602 : undefined);

test("createMcpServer answers every hostile message once, with its id", async () => {
  const data = join(work, "sdk");
  const server = createMcpServer(`okf://${data}?tenant=acme`, undefined, { databaseTools: true });
  const [client, serverSide] = InMemoryTransport.createLinkedPair();
  const answers = inbox();
  client.onmessage = (m) => answers.push(m);
  await server.connect(serverSide);
  await client.start();
  const next = () => answers.next();
  await client.send(INIT);
  assert.equal((await next()).id, "init");
  await client.send({ jsonrpc: "2.0", method: "notifications/initialized" });
  let cases = 0;
  for (const [msg, id, code] of hostile()) {
    await client.send(msg);
    const a = await next();
    assert.equal(a.id, id, `${JSON.stringify(msg).slice(0, 100)}: ${JSON.stringify(a)}`);
    assert.equal(codeOf(a), code, JSON.stringify(a).slice(0, 300));
    cases++;
  }
  const first = hostile()[0][0];
  await client.send(first);
  assert.match((await next()).error.message, /argument content is not valid Unicode/);
  await client.send({ jsonrpc: "2.0", id: "last", method: "ping" });
  assert.equal((await next()).id, "last", "no stray answers");
  assert.equal(answers.size, 0);
  assert.ok(!existsSync(join(data, "tenants", "acme")) || readdirSync(join(data, "tenants", "acme")).length >= 0);
  await client.send(call("w", "snapshot", {}));
  const snap = await next();
  assert.match(snap.result.content[0].text, /no tenant|, 0 concepts/, "nothing was written");
  await client.close();
  await server.close();
  console.log(`createMcpServer: ${cases} hostile messages, each answered once`);
});

test("the Node bin answers every hostile line once, with its id", async () => {
  const data = join(work, "bin");
  const child = spawn(process.execPath, [nodeBin, `okf://${data}?tenant=acme`, "--database-tools"], {
    stdio: ["pipe", "pipe", "ignore"],
  });
  const lines = inbox();
  let buf = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      lines.push(JSON.parse(buf.slice(0, i)));
      buf = buf.slice(i + 1);
    }
  });
  const next = () => lines.next();
  const send = (text) => new Promise((r) => child.stdin.write(text + "\n", r));
  try {
    await send(JSON.stringify(INIT));
    assert.equal((await next()).id, "init");
    await send(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
    const raw = [
      ...hostile().map(([m, id, code]) => [JSON.stringify(m), id, code]),
      [String.raw`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"write","arguments":{"bundle":"b","path":"a.md","content":"\ud800"}}}`, 20, -32602],
      [`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"get","arguments":{"ids":${"[".repeat(100000)}${"]".repeat(100000)}}}}`, 21, -32600],
      [`{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"get"`, 22, -32700],
      ["not json at all", null, -32700],
    ];
    let cases = 0;
    for (const [text, id, code] of raw) {
      await send(text);
      const a = await next();
      assert.equal(a.id, id, `${text.slice(0, 100)}: ${JSON.stringify(a).slice(0, 300)}`);
      assert.equal(codeOf(a), code, JSON.stringify(a).slice(0, 300));
      cases++;
    }
    await send(JSON.stringify(call("w", "write", { bundle: "b", path: "a.md", content: DOC })));
    const w = await next();
    assert.equal(w.id, "w");
    assert.ok(!w.result.isError, JSON.stringify(w));
    console.log(`Node bin: ${cases} hostile lines, each answered once`);
  } finally {
    child.stdin.end();
    await new Promise((r) => (child.exitCode !== null ? r() : child.on("exit", r)));
  }
});
