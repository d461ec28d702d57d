// Benchmarks @okfit/mcp as npm installs it (release addon).
//
//   scripts/build-node.sh --release && cargo build --release -p okfit
//   node bench/node/npx.mjs [--sizes 5000,20000] [--json PATH]
//
// Packs npm/mcp and npm/mcp-linux-x64-gnu, installs both into a fresh
// temporary project (offline), then measures:
// - spawn → tools/list answered (p50/p95 of 11 spawns), for
//   `npx --yes @okfit/mcp`, for the installed bin
//   (node_modules/.bin/okfit-mcp) and for the native binary, in project
//   mode on the repository's okf/;
// - per size of --sizes (default 5000; multiples of 500), a search round
//   trip over stdio (p50/p95 of 200 after a pass), through the Node bin and
//   through the native binary, on store tenant t<N> of okfit-bench-kb
//   (built when missing), and each server's peak RSS (VmHWM).
// --json PATH also writes the figures as JSON. Targets: npx spawn →
// tools/list < 150 ms; search through Node within 1.5× of the native binary.
import { spawn, execFileSync } from "node:child_process";
import { createInterface } from "node:readline";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync, readdirSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const USAGE = "usage: node bench/node/npx.mjs [--sizes LIST] [--json PATH]";
let opts;
try {
  opts = parseArgs({ options: { sizes: { type: "string" }, json: { type: "string" }, help: { type: "boolean", short: "h" } } }).values;
} catch (e) {
  console.error(`npx: ${e.message}\n${USAGE}`);
  process.exit(2);
}
if (opts.help) {
  console.log(USAGE);
  process.exit(0);
}
const sizes = (opts.sizes ?? "5000").split(",").map((s) => s.trim()).filter(Boolean).map((s) => Number(s.replaceAll("_", "")));
if (!sizes.length || sizes.some((n) => !Number.isInteger(n) || n <= 0 || n % 500 !== 0)) {
  console.error(`npx: --sizes expects positive multiples of 500, got ${JSON.stringify(opts.sizes)}`);
  process.exit(2);
}

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const native = join(repo, "target", "release", "okfit-mcp");
if (!existsSync(native)) throw new Error("build first: cargo build --release -p okfit");

const work = mkdtempSync(join(tmpdir(), "okfit-npx-bench-"));
const packs = join(work, "packs");
mkdirSync(packs, { recursive: true });
for (const p of ["npm/mcp", "npm/mcp/npm/linux-x64-gnu"]) {
  execFileSync("npm", ["pack", "--silent", "--pack-destination", packs], { cwd: join(repo, p), stdio: ["ignore", "ignore", "inherit"] });
}
const project = join(work, "project");
mkdirSync(project, { recursive: true });
writeFileSync(join(project, "package.json"), JSON.stringify({ name: "bench", version: "1.0.0", private: true }));
const tgz = readdirSync(packs).map((f) => join(packs, f));
execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", ...tgz], { cwd: project, stdio: ["ignore", "ignore", "inherit"] });

const sorted = (v) => [...v].sort((a, b) => a - b);
const median = (v) => sorted(v)[Math.floor(v.length / 2)];
const p95 = (v) => sorted(v)[Math.min(v.length - 1, Math.floor((v.length * 95) / 100))];
const pct = (v) => ({ p50: median(v), p95: p95(v), runs: v.length });

/** Peak RSS of `pid` in MB of 10^6 bytes (VmHWM), or null. */
function peakRssMb(pid) {
  try {
    const m = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? (Number(m[1]) * 1024) / 1e6 : null;
  } catch {
    return null;
  }
}

function session(cmd, args, env) {
  const child = spawn(cmd, args, { cwd: project, env: { ...process.env, npm_config_offline: "true", ...env }, stdio: ["pipe", "pipe", "ignore"] });
  const waiting = new Map();
  createInterface({ input: child.stdout }).on("line", (line) => {
    try {
      const m = JSON.parse(line);
      const w = waiting.get(m.id);
      if (w) { waiting.delete(m.id); w(m); }
    } catch (_) {}
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
  return pct(times);
}

const env = { OKFIT_PROJECT_DIR: repo };
const viaNpx = await spawnToList("npx", ["--yes", "@okfit/mcp"], env);
const viaBin = await spawnToList(join(project, "node_modules", ".bin", "okfit-mcp"), [], env);
const viaNative = await spawnToList(native, [], env);
console.log(`spawn → tools/list median: npx --yes @okfit/mcp ${viaNpx.p50.toFixed(1)} ms | installed bin ${viaBin.p50.toFixed(1)} ms | native binary ${viaNative.p50.toFixed(1)} ms`);

// Search round trips on tenants t<N> (built when missing, measuring nothing).
execFileSync("cargo", ["run", "--release", "-q", "-p", "okfit-bench", "--bin", "okfit-bench-kb", "--", "--setup-only", "--sizes", sizes.join(",")], { cwd: repo, stdio: ["ignore", "ignore", "inherit"] });
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
  const rss = peakRssMb(s.child.pid);
  s.close();
  return { ms: pct(times), rss };
}
const rows = [];
for (const n of sizes) {
  const dsn = `okf://${join(repo, "bench", "out", "kb", `data${n}`)}?tenant=t${n}`;
  const node = await searches(join(project, "node_modules", ".bin", "okfit-mcp"), [dsn]);
  const nat = await searches(native, [dsn]);
  const ratio = node.ms.p50 / nat.ms.p50;
  rows.push({ concepts: n, node_search_ms: node.ms, native_search_ms: nat.ms, ratio, node_rss_mb: node.rss, native_rss_mb: nat.rss });
  const mb = (x) => (x == null ? "?" : x.toFixed(1));
  console.log(
    `search over stdio at ${n.toLocaleString("en-US")} concepts, p50: Node bin ${node.ms.p50.toFixed(3)} ms | native ${nat.ms.p50.toFixed(3)} ms | ratio ${ratio.toFixed(2)} | peak RSS Node ${mb(node.rss)} MB, native ${mb(nat.rss)} MB`,
  );
}
rmSync(work, { recursive: true, force: true });
if (opts.json) {
  const doc = { startup_ms: { npx: viaNpx, bin: viaBin, native: viaNative }, sizes: rows };
  mkdirSync(dirname(resolve(opts.json)), { recursive: true });
  writeFileSync(opts.json, JSON.stringify(doc, null, 2) + "\n");
}
