// Benchmarks @okfit/wasm in a real browser: the preview page (wasm/preview)
// in Debian's headless Chromium, driven by playwright-core from tests/node.
//
//   scripts/build-wasm.sh && node bench/node/wasm-browser.mjs
//
// Serves wasm/preview on 127.0.0.1, opens it, waits for window.okfitReady
// and calls window.okfitBench(100): the median of 11 validate() runs (after
// one warm-up run) over an in-memory bundle of 100 valid, interlinked Metric
// concepts with their index.md files. Also reports the .wasm size, raw and
// gzipped (level 9). Target: validating 100 concepts < 50 ms.
import { createRequire } from "node:module";
import { createServer } from "node:http";
import { existsSync, readFileSync, statSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { dirname, extname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const preview = join(repo, "wasm", "preview");
const wasmFile = join(preview, "pkg", "okfit_wasm_bg.wasm");
const CHROMIUM = "/usr/bin/chromium";
const N = 100;
const TARGET_MS = 50;

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
let ms;
try {
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/`);
  await page.evaluate(() => window.okfitReady);
  ms = await page.evaluate((n) => window.okfitBench(n), N);
} finally {
  await browser.close();
  server.close();
}

const wasm = readFileSync(wasmFile);
const gz = gzipSync(wasm, { level: 9 }).length;
console.log(`validate ${N} concepts in Chromium: median ${ms.toFixed(2)} ms (11 runs); okfit_wasm_bg.wasm ${wasm.length} bytes, ${gz} gzipped`);
console.log(`target: validate ${N} concepts < ${TARGET_MS} ms ${ms < TARGET_MS ? "MET" : "MISSED"}`);
