// Benchmarks @okfit/mcp as npm installs it (release addon).
//
//   scripts/build-node.sh --release && cargo build --release -p okfit
//   node bench/node/npx.mjs
//
// Packs npm/mcp and npm/mcp-linux-x64-gnu, installs both into a fresh
// temporary project (offline), then measures (median of 11 spawns):
// - spawn → tools/list answered, for `npx --yes @okfit/mcp`, for the
//   installed bin (node_modules/.bin/okfit-mcp) and for the native binary,
//   in project mode on the repository's okf/;
// - a search round trip over stdio (p50 of 200 after a pass), through the
//   Node bin and through the native binary, on the 5,000-concept store
//   tenant of okfit-bench-kb (built when missing).
// Targets: npx spawn → tools/list < 150 ms; search through Node within
// 1.5× of the native binary.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync, readdirSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const native = join(repo, "target", "release", "okfit-mcp");
if (!existsSync(native)) throw new Error("build first: cargo build --release -p okfit");

const work = mkdtempSync(join(tmpdir(), "okfit-npx-bench-"));
const packs = join(work, "packs");
execFileSync("mkdir", ["-p", packs]);
for (const p of ["npm/mcp", "npm/mcp-linux-x64-gnu"]) {
  execFileSync("npm", ["pack", "--silent", "--pack-destination", packs], { cwd: join(repo, p), stdio: ["ignore", "ignore", "inherit"] });
}
const project = join(work, "project");
execFileSync("mkdir", ["-p", project]);
writeFileSync(join(project, "package.json"), JSON.stringify({ name: "bench", version: "1.0.0", private: true }));
const tgz = readdirSync(packs).map((f) => join(packs, f));
execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", ...tgz], { cwd: project, stdio: ["ignore", "ignore", "inherit"] });

const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];

function session(cmd, args, env) {
  const child = spawn(cmd, args, { cwd: project, env: { ...process.env, npm_config_offline: "true", ...env }, stdio: ["pipe", "pipe", "ignore"] });
  let buf = "";
  const waiting = new Map();
  child.stdout.on("data", (d) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        const m = JSON.parse(line);
        const w = waiting.get(m.id);
        if (w) { waiting.delete(m.id); w(m); }
      } catch (_) {}
    }
  });
  let id = 0;
  const request = (method, params) => new Promise((res) => {
    id += 1;
    waiting.set(id, res);
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  });
  const init = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "0" } };
  return { child, request, init, close: () => { child.stdin.end(); child.kill(); } };
}

async function spawnToList(cmd, args, env) {
  const times = [];
  for (let i = 0; i < 11; i++) {
    const t = performance.now();
    const s = session(cmd, args, env);
    await s.request("initialize", s.init);
    await s.request("tools/list", {});
    times.push(performance.now() - t);
    s.close();
  }
  return median(times);
}

const env = { OKFIT_PROJECT_DIR: repo };
const viaNpx = await spawnToList("npx", ["--yes", "@okfit/mcp"], env);
const viaBin = await spawnToList(join(project, "node_modules", ".bin", "okfit-mcp"), [], env);
const viaNative = await spawnToList(native, [], env);

// Search round trips on the 5,000-concept tenant.
execFileSync("cargo", ["run", "--release", "-q", "-p", "okfit-bench", "--bin", "okfit-bench-kb", "--", "--sizes", "5000"], { cwd: repo, stdio: ["ignore", "ignore", "inherit"] });
const dsn = `okf://${join(repo, "bench", "out", "kb", "data")}?tenant=t5000`;
const queries = ["revenue window", "schema refresh", "weekly cohort pipeline", "latency incident", "customer region", "approval budget"];
async function searches(cmd, args) {
  const s = session(cmd, args, {});
  await s.request("initialize", s.init);
  for (const q of queries) await s.request("tools/call", { name: "search", arguments: { query: q } });
  const times = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    const r = await s.request("tools/call", { name: "search", arguments: { query: queries[i % queries.length] } });
    times.push(performance.now() - t);
    if (r.result?.isError) throw new Error(JSON.stringify(r));
  }
  s.close();
  return median(times);
}
const nodeSearch = await searches(join(project, "node_modules", ".bin", "okfit-mcp"), [dsn]);
const nativeSearch = await searches(native, [dsn]);
rmSync(work, { recursive: true, force: true });
console.log(
  `spawn → tools/list median: npx --yes @okfit/mcp ${viaNpx.toFixed(1)} ms | installed bin ${viaBin.toFixed(1)} ms | native binary ${viaNative.toFixed(1)} ms\n` +
  `search over stdio at 5,000 concepts, p50: Node bin ${nodeSearch.toFixed(3)} ms | native ${nativeSearch.toFixed(3)} ms | ratio ${(nodeSearch / nativeSearch).toFixed(2)}`,
);
