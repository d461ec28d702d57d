// Benchmarks @okfit/wasm in a real browser: the preview page (wasm/preview)
// in Debian's headless Chromium, driven by playwright-core from tests/node.
//
//   scripts/build-wasm.sh && node bench/node/wasm-browser.mjs [--sizes 100,5000] [--runs N] [--json PATH]
//
// Serves wasm/preview on 127.0.0.1, opens it, waits for window.okfitReady
// and, per size N of --sizes (default 100), times validate() over the page's
// in-memory bundle of N valid, interlinked Metric concepts with their
// index.md files (window.okfitBenchBundle(N), the bundle window.okfitBench
// uses): one warm-up run, then 11 measured runs below 5,000 concepts and 5
// from 5,000 up (--runs overrides both). Also reports the .wasm size, raw
// and gzipped (level 9); --json PATH writes the figures as JSON.
// Target: validating 100 concepts < 50 ms.
import { createRequire } from "node:module";
import { createServer } from "node:http";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { dirname, extname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const preview = join(repo, "wasm", "preview");
const wasmFile = join(preview, "pkg", "okfit_wasm_bg.wasm");
const CHROMIUM = "/usr/bin/chromium";
const TARGET_N = 100;
const TARGET_MS = 50;
/** Measured runs per size: 11, or 5 from this many concepts up. */
const BIG = 5000;

const USAGE = "usage: node bench/node/wasm-browser.mjs [--sizes LIST] [--runs N] [--json PATH]";
let opts;
try {
  opts = parseArgs({ options: { sizes: { type: "string" }, runs: { type: "string" }, json: { type: "string" }, help: { type: "boolean", short: "h" } } }).values;
} catch (e) {
  console.error(`wasm-browser: ${e.message}\n${USAGE}`);
  process.exit(2);
}
if (opts.help) {
  console.log(USAGE);
  process.exit(0);
}
const positive = (s) => {
  const n = Number(String(s).trim().replaceAll("_", ""));
  return Number.isInteger(n) && n > 0 ? n : NaN;
};
const sizes = (opts.sizes ?? String(TARGET_N)).split(",").filter((s) => s.trim()).map(positive);
const fixedRuns = opts.runs === undefined ? undefined : positive(opts.runs);
if (!sizes.length || sizes.some(Number.isNaN) || Number.isNaN(fixedRuns)) {
  console.error(`wasm-browser: --sizes and --runs expect positive integers\n${USAGE}`);
  process.exit(2);
}
const runsFor = (n) => fixedRuns ?? (n >= BIG ? 5 : 11);

if (!existsSync(wasmFile) || !existsSync(join(preview, "pkg", "okfit_wasm.js"))) {
  console.error("wasm-browser: wasm/preview/pkg is not built; run scripts/build-wasm.sh first");
  process.exit(2);
}
if (!existsSync(CHROMIUM)) {
  console.error(`wasm-browser: ${CHROMIUM} is missing; install Debian's chromium package (apt-get install chromium)`);
  process.exit(2);
}
const require = createRequire(join(repo, "tests", "node", "package.json"));
let chromium;
try {
  ({ chromium } = require("playwright-core"));
} catch {
  console.error("wasm-browser: playwright-core is not installed; run npm ci in tests/node");
  process.exit(2);
}

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".wasm": "application/wasm",
};
const server = createServer((req, res) => {
  let rel = decodeURIComponent(new URL(req.url, "http://x").pathname);
  if (rel.endsWith("/")) rel += "index.html";
  const file = resolve(preview, `.${rel}`);
  if (!file.startsWith(preview + sep) || !existsSync(file) || !statSync(file).isFile()) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream", "cache-control": "no-store" });
  res.end(readFileSync(file));
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
const sorted = (v) => [...v].sort((a, b) => a - b);
const rows = [];
try {
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.evaluate(() => window.okfitReady);
  for (const n of sizes) {
    const runs = runsFor(n);
    // As window.okfitBench(n) does, keeping every run's time.
    const r = await page.evaluate(({ n, runs }) => {
      const options = window.okfitBenchBundle(n);
      const first = window.okfitWasm.validate(options);
      const times = [];
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        window.okfitWasm.validate(options);
        times.push(performance.now() - t0);
      }
      return { times, concepts: first.summary.concepts, diagnostics: first.diagnostics.length };
    }, { n, runs });
    if (r.concepts !== n || r.diagnostics !== 0) {
      console.error(`wasm-browser: the ${n}-concept bundle validated as ${r.concepts} concepts with ${r.diagnostics} findings`);
    }
    const t = sorted(r.times);
    const ms = { p50: t[Math.floor(t.length / 2)], p95: t[Math.min(t.length - 1, Math.floor((t.length * 95) / 100))], min: t[0], max: t[t.length - 1] };
    rows.push({ concepts: n, ms, runs });
    console.log(`validate ${n} concepts in Chromium: median ${ms.p50.toFixed(2)} ms (${runs} runs; min ${ms.min.toFixed(2)}, max ${ms.max.toFixed(2)})`);
  }
} finally {
  await browser.close();
  server.close();
}

const wasm = readFileSync(wasmFile);
const gz = gzipSync(wasm, { level: 9 }).length;
console.log(`okfit_wasm_bg.wasm ${wasm.length} bytes, ${gz} gzipped`);
const target = rows.find((r) => r.concepts === TARGET_N);
if (target) {
  console.log(`target: validate ${TARGET_N} concepts < ${TARGET_MS} ms ${target.ms.p50 < TARGET_MS ? "MET" : "MISSED"}`);
}
if (opts.json) {
  mkdirSync(dirname(resolve(opts.json)), { recursive: true });
  writeFileSync(opts.json, JSON.stringify({ wasm_bytes: wasm.length, wasm_gzip_bytes: gz, sizes: rows }, null, 2) + "\n");
}
