// The browser preview (wasm/preview) in a real headless Chromium: Debian's
// /usr/bin/chromium driven by playwright-core (never a downloaded browser),
// the page served over HTTP by a tiny node:http server.
//
// Checks: the prefilled concept passes; findings appear and go as the
// concept is edited (type-missing, frontmatter-unparseable), with 1-based
// line:column, severity and code on each <li> and the lines marked in the
// editor; bad paths and a malformed okfit.toml give clear messages instead
// of a crash; an opened folder (a project with okfit.toml, then a bare
// bundle) shows its findings grouped by file; the page says clearly when
// WebAssembly or the module is missing, or when opened from file://.
// It also runs window.okfitBench(100) and logs the median (performance is
// measured by bench/node/wasm-browser.mjs, never asserted here) and saves a
// screenshot to target/browser-test/preview.png.
//
// Needs scripts/build-wasm.sh (the page's pkg/) and Debian's chromium.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, extname, join, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");
const preview = join(repo, "wasm", "preview");
const artifacts = join(repo, "target", "browser-test");
const CHROMIUM = "/usr/bin/chromium";
const LAUNCH = {
  executablePath: CHROMIUM,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
};

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json",
  ".png": "image/png",
  ".svg": "image/svg+xml",
};

/** A static file server for `root` on 127.0.0.1, port chosen by the OS. */
function serve(root) {
  const server = createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    let rel;
    try {
      rel = decodeURIComponent(url.pathname);
    } catch {
      res.writeHead(400).end();
      return;
    }
    if (rel.endsWith("/")) rel += "index.html";
    const file = resolve(root, `.${rel}`);
    if (file !== root && !file.startsWith(root + sep)) {
      res.writeHead(403).end();
      return;
    }
    if (!existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      return;
    }
    res.writeHead(200, {
      "content-type": TYPES[extname(file)] ?? "application/octet-stream",
      "cache-control": "no-store",
    });
    res.end(readFileSync(file));
  });
  return new Promise((ok) => server.listen(0, "127.0.0.1", () => ok(server)));
}

const CONCEPT = `---
type: Metric
title: Weekly active users
description: Distinct users who signed in at least once in the last seven days.
status: draft
---

# Weekly active users

Counts the distinct users who signed in in a rolling seven-day window.
`;
const NO_TYPE = CONCEPT.replace("type: Metric\n", "");
const BROKEN_YAML = CONCEPT.replace("status: draft", "status: [draft");

let server;
let base;
let browser;
let page;
const pageErrors = [];

async function setConcept(text) {
  await page.fill("#concept", text);
}

async function waitStatus(re) {
  await page.waitForFunction(
    (src) => new RegExp(src).test(document.querySelector("#status").textContent),
    re.source,
    { timeout: 5000 },
  ).catch(async (e) => {
    throw new Error(`#status never matched ${re}; it says ${JSON.stringify(await page.textContent("#status"))} (${e.message})`);
  });
}

const items = (sel) => page.$$eval(sel, (lis) => lis.map((li) => ({
  code: li.dataset.code, severity: li.dataset.severity, line: li.dataset.line, text: li.textContent,
})));

before(async () => {
  assert.ok(
    existsSync(CHROMIUM),
    `${CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium); scripts/test.sh does this when run as root`,
  );
  assert.ok(
    existsSync(join(preview, "pkg", "okfit_wasm.js")) && existsSync(join(preview, "pkg", "okfit_wasm_bg.wasm")),
    "wasm/preview/pkg is not built: run scripts/build-wasm.sh",
  );
  server = await serve(preview);
  base = `http://127.0.0.1:${server.address().port}/`;
  browser = await chromium.launch(LAUNCH);
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("pageerror", (e) => pageErrors.push(e.message));
  await page.goto(base);
  await page.evaluate(() => window.okfitReady).catch(async (e) => {
    throw new Error(`okfit did not start: ${e.message}; #status: ${await page.textContent("#status")}`);
  });
});

after(async () => {
  await browser?.close();
  server?.close();
});

describe("okfit preview in Chromium", () => {
  test("the prefilled example concept has no error-level findings", async () => {
    assert.equal(await page.inputValue("#path"), "concepts/example.md");
    const text = await page.inputValue("#concept");
    assert.match(text, /^---\ntype: Metric\ntitle: .+\ndescription: .+\nstatus: draft\n/);
    assert.deepEqual(await items('#diagnostics li[data-severity="error"]'), []);
    assert.equal(await page.textContent("#status"), "No findings");
    assert.equal(await page.$$eval("#gutter-lines .ln", (l) => l.length), text.split("\n").length);
    assert.equal(await page.$$eval("#gutter-lines .ln[class*=sev-]", (l) => l.length), 0);
  });

  test("a concept without type gets type-missing as you type, and loses it when fixed", async () => {
    await setConcept(NO_TYPE);
    await page.waitForSelector('#diagnostics li[data-code="type-missing"]', { timeout: 5000 });
    const [d] = await items('#diagnostics li[data-code="type-missing"]');
    assert.equal(d.severity, "error");
    // type-missing carries no range: the file stands in for line:column, as in the CLI.
    assert.match(d.text, /^concepts\/example\.md error type-missing `type` must be a non-empty string$/);
    await waitStatus(/^1 error$/);

    await setConcept(NO_TYPE.replace("---\n", "---\ntype: Metric\n"));
    await waitStatus(/^No findings$/);
    assert.deepEqual(await items('#diagnostics li[data-code="type-missing"]'), []);
    assert.deepEqual(await items('#diagnostics li[data-severity="error"]'), []);
  });

  test("broken YAML gives frontmatter-unparseable at its 1-based line:column, marked in the editor", async () => {
    await setConcept(BROKEN_YAML);
    await page.waitForSelector('#diagnostics li[data-code="frontmatter-unparseable"]', { timeout: 5000 });
    const [d] = await items('#diagnostics li[data-code="frontmatter-unparseable"]');
    assert.equal(d.severity, "error");
    // "status: [draft" is line 5; the value starts at column 9.
    assert.match(d.text, /^5:9 error frontmatter-unparseable \S/);
    assert.equal(d.line, "5");
    assert.deepEqual(await page.$$eval("#gutter-lines .ln.sev-error", (l) => l.map((x) => x.textContent)), ["5"]);
    assert.equal(await page.$$eval("#backdrop-lines .ln.sev-error", (l) => l.length), 1);
    assert.ok(await page.$("#backdrop-lines .ln:nth-child(5).sev-error"), "line 5 is highlighted behind the text");
    // Clicking the finding selects its range in the textarea.
    await page.click('#diagnostics li[data-code="frontmatter-unparseable"]');
    const sel = await page.$eval("#concept", (t) => [t.selectionStart, t.selectionEnd]);
    assert.equal(sel[0], BROKEN_YAML.indexOf("[draft"));
    await setConcept(CONCEPT);
    await waitStatus(/^No findings$/);
    assert.equal(await page.$$eval("#gutter-lines .ln[class*=sev-]", (l) => l.length), 0);
  });

  test("the path takes part: warnings move with it, and bad paths get a clear message", async () => {
    try {
      await page.fill("#path", "notes/readme.txt");
      await waitStatus(/must end in \.md/);
      // okfit's own message names the path; the page shows it as an error, not a crash.
      await page.fill("#path", "../outside.md");
      await waitStatus(/"\.\.\/outside\.md"/);
      assert.match(await page.getAttribute("#status", "class"), /status-error/);
      assert.match(await page.getAttribute("#path", "class"), /invalid/);
      assert.deepEqual(await items("#diagnostics li"), []);
    } finally {
      await page.fill("#path", "concepts/example.md");
    }
    await waitStatus(/^No findings$/);
  });

  test("a malformed okfit.toml shows a clear config error instead of crashing", async () => {
    const good = await page.inputValue("#config");
    await page.fill("#config", '[bundle\nprofile = "none"\n');
    await waitStatus(/^okfit\.toml error: malformed config okfit\.toml: .*TOML parse error/);
    assert.ok(await page.isVisible("#config-error"));
    assert.match(await page.textContent("#config-error"), /malformed config okfit\.toml: /);
    assert.deepEqual(await items("#diagnostics li"), []);

    await page.fill("#config", '[lint]\nno_such_rule = "off"\n');
    await waitStatus(/malformed config okfit\.toml: .*no_such_rule/);

    // An empty box means okfit's defaults: the software-project profile, no declared types.
    await page.fill("#config", "");
    await page.waitForSelector('#diagnostics li[data-code="project-missing"]', { timeout: 5000 });
    assert.ok(!(await page.isVisible("#config-error")));
    const [p] = await items('#diagnostics li[data-code="project-missing"]');
    assert.match(p.text, /^\(bundle\) error project-missing No Project concept/);

    await page.fill("#config", good);
    await waitStatus(/^No findings$/);
    assert.ok(!(await page.isVisible("#config-error")));
  });

  describe("open folder", () => {
    let dir;
    before(() => {
      dir = mkdtempSync(join(tmpdir(), "okfit-browser-"));
      const w = (p, text) => {
        mkdirSync(dirname(join(dir, p)), { recursive: true });
        writeFileSync(join(dir, p), text);
      };
      w("project/okfit.toml", '[bundle]\npath = "okf"\nprofile = "none"\n\n[types.Metric]\ndescription = "A number."\n');
      w("project/README.md", "not part of the bundle (no frontmatter)\n");
      w("project/okf/index.md", '---\nokf_version: "0.2"\n---\n\n# Subdirectories\n\n* [metrics](metrics/index.md)\n');
      w("project/okf/metrics/index.md", "# Metric\n\n* [Revenue](revenue.md)\n* [Orders](orders.md)\n");
      w("project/okf/metrics/revenue.md", "---\ntype: Metric\ntitle: Revenue\ndescription: Money in.\n---\n\n# Revenue\n\nSee [orders](orders.md) and ![chart](chart.png).\n");
      w("project/okf/metrics/churn.md", "---\ntitle: Churn\ndescription: Customers lost.\n---\n\n# Churn\n");
      w("project/okf/metrics/orders.md", "---\ntype: Metric\ntitle: Orders\ndescription: Orders placed.\n---\n\n# Orders\n\nJoins [customers](customers.md).\n");
      writeFileSync(join(dir, "project/okf/metrics/chart.png"), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
      w("project/okf/notes/idea.md", "---\ntype: Metric\ntitle: Idea\ndescription: An idea.\n---\n\n# Idea\n");
      w("project/okf/.drafts/draft.md", "no frontmatter, but hidden, so never read\n");
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    const groups = () => page.$$eval("#bundle-diagnostics [data-file]", (gs) => Object.fromEntries(gs.map((g) => [
      g.dataset.file,
      [...g.querySelectorAll("li")].map((li) => `${li.dataset.severity} ${li.dataset.code}`),
    ])));

    test("a project folder: its okfit.toml picks the bundle, findings grouped by file", async () => {
      await page.setInputFiles("#folder", join(dir, "project"));
      const chosen = await page.$eval("#folder", (i) => [...i.files].map((f) => f.webkitRelativePath).sort());
      assert.ok(chosen.includes("project/okf/.drafts/draft.md") && chosen.includes("project/okfit.toml"), chosen.join(", "));
      await page.waitForSelector('#bundle-diagnostics [data-file="metrics/churn.md"] li[data-code="type-missing"]', { timeout: 5000 });
      assert.deepEqual(await groups(), {
        "metrics/churn.md": ["error type-missing"],
        "metrics/orders.md": ["warning broken-links"],
        "notes/index.md": ["warning missing-index"],
      });
      const [link] = await items('#bundle-diagnostics [data-file="metrics/orders.md"] li');
      assert.match(link.text, /^9:7 warning broken-links Link target "customers\.md" does not exist in the bundle$/);
      const summary = await page.textContent("#bundle-summary");
      assert.match(summary, /^project: 1 error, 2 warnings · 3 concepts in 7 files \(6 Markdown, 1 asset\) · exit code 2 · bundle okf\/ · config: okfit\.toml from the folder/);
      assert.match(await page.textContent("#bundle-diagnostics"), /4 other Markdown files have no findings/);
    });

    test("a bare bundle folder uses the okfit.toml box, and follows its edits", async () => {
      await page.setInputFiles("#folder", join(dir, "project", "okf"));
      await page.waitForFunction(() => /^okf: /.test(document.querySelector("#bundle-summary").textContent), null, { timeout: 5000 });
      // The box turns missing-index off.
      assert.deepEqual(await groups(), {
        "metrics/churn.md": ["error type-missing"],
        "metrics/orders.md": ["warning broken-links"],
      });
      assert.match(await page.textContent("#bundle-summary"), /bundle at the folder root · config: the okfit\.toml box above/);
      const good = await page.inputValue("#config");
      await page.fill("#config", good.replace('missing_index = "off"', 'missing_index = "error"'));
      await page.waitForSelector('#bundle-diagnostics [data-file="notes/index.md"] li[data-severity="error"][data-code="missing-index"]', { timeout: 5000 });
      await page.fill("#config", good);
      await page.waitForFunction(() => !document.querySelector('#bundle-diagnostics [data-file="notes/index.md"]'), null, { timeout: 5000 });
    });
  });

  test("okfitBench(100) returns the median ms of validating a 100-concept bundle", async (t) => {
    const clean = await page.evaluate(() => {
      const r = window.okfitWasm.validate(window.okfitBenchBundle(100));
      return { concepts: r.summary.concepts, diagnostics: r.diagnostics };
    });
    assert.equal(clean.concepts, 100);
    assert.deepEqual(clean.diagnostics, [], "the benchmark bundle is clean");
    const ms = await page.evaluate(() => window.okfitBench(100));
    assert.equal(typeof ms, "number");
    assert.ok(ms > 0, `median ${ms}`);
    t.diagnostic(`validate 100 concepts in Chromium: median ${ms.toFixed(2)} ms (11 runs; target < 50 ms, measured by bench/node/wasm-browser.mjs)`);
  });

  test("screenshot of the page with findings (target/browser-test/preview.png)", async () => {
    await setConcept(`${CONCEPT.replace("status: draft", "status: drafty")}\nSee [the definition](#definiton) and [revenue](revenue.md).\n`);
    await page.waitForSelector('#diagnostics li[data-code="status-unknown"]', { timeout: 5000 });
    await page.waitForSelector('#diagnostics li[data-code="broken-links"]', { timeout: 5000 });
    assert.ok((await page.$$eval("#gutter-lines .ln.sev-warning", (l) => l.length)) >= 2);
    mkdirSync(artifacts, { recursive: true });
    await page.screenshot({ path: join(artifacts, "preview.png"), fullPage: true });
    assert.ok(statSync(join(artifacts, "preview.png")).size > 10_000);
  });

  test("no uncaught errors in the page", () => {
    assert.deepEqual(pageErrors, []);
  });
});

describe("okfit preview failure messages", () => {
  test("without WebAssembly the page says so", async () => {
    const p = await browser.newPage();
    try {
      await p.addInitScript(() => { delete globalThis.WebAssembly; });
      await p.goto(base);
      await assert.rejects(p.evaluate(() => window.okfitReady), /does not support WebAssembly/);
      assert.ok(await p.isVisible("#unsupported"));
      assert.match(await p.textContent("#unsupported"), /does not support WebAssembly/);
      assert.match(await p.textContent("#status"), /does not support WebAssembly/);
    } finally {
      await p.close();
    }
  });

  test("when the .wasm cannot be loaded the page says what to do", async () => {
    const p = await browser.newPage();
    try {
      await p.route("**/okfit_wasm_bg.wasm", (route) => route.fulfill({ status: 404, body: "not found" }));
      await p.goto(base);
      await assert.rejects(p.evaluate(() => window.okfitReady), /Could not load the WebAssembly module/);
      assert.match(await p.textContent("#status"), /Could not load the WebAssembly module pkg\/okfit_wasm_bg\.wasm .*scripts\/build-wasm\.sh/);
      assert.ok(await p.isVisible("#unsupported"));
    } finally {
      await p.close();
    }
  });

  test("opened from file:// the page asks to serve it over HTTP", async () => {
    const p = await browser.newPage();
    try {
      await p.goto(pathToFileURL(join(preview, "index.html")).href);
      await p.waitForSelector("#unsupported:not([hidden])", { timeout: 5000 });
      assert.match(await p.textContent("#unsupported"), /file:\/\/ .*over HTTP.*python3 -m http\.server/);
      assert.match(await p.textContent("#status"), /over HTTP/);
    } finally {
      await p.close();
    }
  });
});
