// @okfit/wasm from Node: the Node ESM and CommonJS entries and the browser
// (web) build loaded in Node give the same answers; validate(),
// parseConcept() and manifest() against the contract (SPEC §8,
// reference/okfit.md §3–§9, reference/langonrock.md §3.6); bad input is an
// Error with a clear message, garbage text is a report; and the wasm report
// equals the CLI's `okfit validate --format json` on the four official
// sample bundles and on a synthetic project with a config and assets.
//
// Needs scripts/build-wasm.sh (npm/wasm/node, npm/wasm/web) and
// cargo build -p okfit (target/debug/okfit; OKFIT_BIN overrides it, else the
// okfit next to OKFIT_MCP_BIN). The sample bundles are read from
// /work/shared/corpora/google-okf-samples/v0.2 (OKFIT_SAMPLES overrides);
// when they are absent those parity tests are skipped with a note.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { spawnSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import {
  existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import init, { initSync, validate, parseConcept, manifest } from "../../npm/wasm/node.mjs";
import * as esm from "../../npm/wasm/node.mjs";
import initWeb, * as web from "../../npm/wasm/web/okfit_wasm.js";

const require = createRequire(import.meta.url);
const cjs = require("../../npm/wasm/node.cjs");

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, "..", "..");
const pkgDir = join(repo, "npm", "wasm");
const okfitBin = process.env.OKFIT_BIN
  ?? join(process.env.OKFIT_MCP_BIN ? dirname(process.env.OKFIT_MCP_BIN) : join(repo, "target", "debug"), "okfit");
const samples = process.env.OKFIT_SAMPLES ?? "/work/shared/corpora/google-okf-samples/v0.2";
const SAMPLE_BUNDLES = ["acme_retail", "crypto_bitcoin", "ga4", "stackoverflow"];

const NOW = "2026-09-01T00:00:00Z";
const NO_PROFILE = '[bundle]\nprofile = "none"\n';
const QUIET = NO_PROFILE + '[lint]\nmissing_index = "off"\n';
const SUMMARY_KEYS = ["conformance_errors", "lint_errors", "lint_warnings", "lint_info", "profile_errors", "concepts"];
const ENVELOPE_KEYS = [
  "schema", "okfit_version", "engine_version", "producer", "distribution", "okf_version", "root", "profile",
  "exit_code", "summary", "diagnostics",
];

const webBytes = await readFile(new URL("../../npm/wasm/web/okfit_wasm_bg.wasm", import.meta.url));
await initWeb({ module_or_path: webBytes });

// ---------------------------------------------------------------- helpers

/** Asserts the JSON envelope of reference/okfit.md §7.6 and its internal consistency. */
function assertReport(r, what = "report") {
  assert.equal(typeof r, "object", `${what} is an object`);
  assert.deepEqual(Object.keys(r), ENVELOPE_KEYS, `${what}: envelope keys in order`);
  assert.equal(r.schema, 1);
  assert.equal(r.producer, "@okfit/wasm");
  assert.equal(r.root, "");
  assert.equal(r.distribution, null);
  assert.deepEqual(Object.keys(r.summary), SUMMARY_KEYS);
  assert.ok(Array.isArray(r.diagnostics));
  const count = (source, severity) =>
    r.diagnostics.filter((d) => d.source === source && (!severity || d.severity === severity)).length;
  assert.equal(r.summary.conformance_errors, count("core.conformance", "error"), `${what}: conformance count`);
  assert.equal(r.summary.lint_errors, count("core.lint", "error"), `${what}: lint error count`);
  assert.equal(r.summary.lint_warnings, count("core.lint", "warning"), `${what}: lint warning count`);
  assert.equal(r.summary.lint_info, count("core.lint", "info"), `${what}: lint info count`);
  assert.equal(r.summary.profile_errors, count("profile", "error"), `${what}: profile count`);
  const expectedExit = r.summary.conformance_errors > 0 ? 2
    : r.summary.lint_errors + r.summary.profile_errors > 0 ? 1 : 0;
  assert.equal(r.exit_code, expectedExit, `${what}: exit code follows the summary`);
  for (const d of r.diagnostics) {
    assert.ok(["core.conformance", "core.lint", "profile"].includes(d.source), `source ${d.source}`);
    assert.ok(["error", "warning", "info"].includes(d.severity), `severity ${d.severity}`);
    assert.equal(typeof d.code, "string");
    assert.equal(typeof d.message, "string");
    assert.ok(d.message.length > 0);
    if ("range" in d) {
      assert.deepEqual(Object.keys(d.range), ["offset", "length", "line", "character"]);
      for (const k of Object.keys(d.range)) assert.ok(Number.isInteger(d.range[k]) && d.range[k] >= 0, `range.${k}`);
    }
  }
  return r;
}

const codes = (r) => r.diagnostics.map((d) => `${d.file} ${d.code}`);
const only = (r, code) => r.diagnostics.filter((d) => d.code === code);

/** validate() with the profile off and missing-index quiet unless a config is given. */
function check(documents, { config = QUIET, now = NOW } = {}) {
  return assertReport(validate({ documents, config, now }));
}

/** The Error a call throws (fails when it returns or throws a non-Error / a wasm trap). */
function thrown(fn, what) {
  let error;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  assert.ok(error !== undefined, `${what}: expected an Error, but it returned`);
  assert.ok(error instanceof Error, `${what}: expected an Error, got ${String(error)}`);
  assert.equal(error.constructor, Error,
    `${what}: expected a plain Error with a clear message, got ${error.constructor.name}: ${error.message}`);
  assert.ok(error.message.length > 0, `${what}: message is empty`);
  return error;
}

/**
 * Calls `expr` (source text using validate/parseConcept/manifest) in a child
 * Node process, so that a wasm trap cannot leave this process's module in
 * a bad state. Returns {returned, value} or {threw, name, message}.
 */
function isolated(expr) {
  const entry = new URL("../../npm/wasm/node.mjs", import.meta.url).href;
  const script = `
    import { validate, parseConcept, manifest } from ${JSON.stringify(entry)};
    let out;
    try { out = { returned: true, value: (${expr}) }; }
    catch (e) { out = { threw: true, name: e && e.constructor && e.constructor.name, isError: e instanceof Error, message: String(e && e.message) }; }
    process.stdout.write(JSON.stringify(out));
  `;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  assert.equal(r.status, 0, `child process for ${expr} exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

function assertIsolatedError(expr, pattern) {
  const out = isolated(expr);
  assert.ok(out.threw, `${expr}: expected a thrown Error, but it returned ${JSON.stringify(out.value)}`);
  assert.equal(out.name, "Error", `${expr}: expected a plain Error with a clear message, got ${out.name}: ${out.message}`);
  if (pattern) assert.match(out.message, pattern, `${expr}: message`);
}

/** Every file under root as posix relative paths, skipping dot-entries and node_modules (as the CLI walks). */
function walk(root, rel = "") {
  const out = [];
  const entries = readdirSync(join(root, rel), { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    if (e.name.startsWith(".") || e.name === "node_modules" || e.name === ".git") continue;
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...walk(root, r));
    else if (e.isFile()) out.push(r);
  }
  return out;
}

/** The documents validate() takes for a bundle folder: .md as text, other files as assets. */
function documentsOf(root) {
  return walk(root).map((p) => ({ path: p, text: p.endsWith(".md") ? readFileSync(join(root, p), "utf8") : "" }));
}

/** `okfit validate <project> --format json --now NOW --skip-provenance` with the user config tiers isolated. */
function cliValidate(project) {
  assert.ok(existsSync(okfitBin), `the okfit CLI is missing at ${okfitBin}: run cargo build -p okfit (or set OKFIT_BIN)`);
  const home = join(project, ".home");
  mkdirSync(home, { recursive: true });
  const env = { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, ".config"), NO_COLOR: "1" };
  delete env.OKFIT_NOW;
  delete env.XDG_CONFIG_DIRS;
  const r = spawnSync(okfitBin, ["validate", project, "--format", "json", "--now", NOW, "--skip-provenance"], {
    cwd: project, env, encoding: "utf8", maxBuffer: 64 << 20,
  });
  assert.ok([0, 1, 2].includes(r.status), `okfit validate exited ${r.status}: ${r.stderr}${r.stdout}`);
  const envelope = JSON.parse(r.stdout);
  assert.equal(envelope.exit_code, r.status, "the CLI's exit status equals its envelope's exit_code");
  return envelope;
}

/**
 * The envelope minus its packaging fields (reference/okfit.md §7.6: "compare
 * engine_version + okf_version; the rest is packaging"): producer, root,
 * okfit_version and distribution legitimately name the front end.
 */
function comparable(envelope) {
  const { producer, root, okfit_version, distribution, ...rest } = envelope;
  return rest;
}

function assertParity(wasmReport, cliReport, what) {
  assert.deepEqual(Object.keys(wasmReport), Object.keys(cliReport), `${what}: same envelope keys in the same order`);
  assert.equal(cliReport.producer, "okfit");
  assert.equal(wasmReport.producer, "@okfit/wasm");
  assert.equal(wasmReport.root, "");
  assert.ok(cliReport.root.endsWith("/okf"), `${what}: CLI root ${cliReport.root}`);
  assert.equal(wasmReport.distribution, cliReport.distribution);
  const w = comparable(wasmReport);
  const c = comparable(cliReport);
  // Diagnostics one by one first, so that a difference names the finding.
  const key = (d) => JSON.stringify(d);
  const wSet = new Set(w.diagnostics.map(key));
  const cSet = new Set(c.diagnostics.map(key));
  const onlyWasm = w.diagnostics.filter((d) => !cSet.has(key(d)));
  const onlyCli = c.diagnostics.filter((d) => !wSet.has(key(d)));
  assert.deepEqual({ onlyWasm, onlyCli }, { onlyWasm: [], onlyCli: [] }, `${what}: diagnostics only one side reports`);
  assert.deepEqual(w.diagnostics, c.diagnostics, `${what}: diagnostics (order included)`);
  assert.deepEqual(w.summary, c.summary, `${what}: summary`);
  assert.equal(w.exit_code, c.exit_code, `${what}: exit_code`);
  assert.deepEqual(w, c, `${what}: the rest of the envelope`);
}

function tempProject() {
  return mkdtempSync(join(tmpdir(), "okfit-wasm-test-"));
}

function writeTree(root, files) {
  for (const [p, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), content);
  }
}

// A small bundle exercising most paths; used by the entry-equivalence test.
const SAMPLE_DOCS = [
  { path: "index.md", text: '---\nokf_version: "0.2"\n---\n\n# Metric\n\n* [Revenue](metrics/revenue.md) - Total revenue.\n' },
  {
    path: "metrics/revenue.md",
    text: "---\ntype: Metric\ntitle: Revenue\ndescription: Total revenue.\nstale_after: 2026-06-01T00:00:00Z\n---\n\n"
      + "# Revenue\n\nFrom [orders](../tables/orders.md), [gone](missing.md) and ![chart](chart.png).\n",
  },
  { path: "tables/orders.md", text: "---\ntitle: no type here\n---\n\nOrders.\n" },
  { path: "tables/broken.md", text: "---\ntype: [\n---\n" },
  { path: "metrics/chart.png", text: "" },
];
const SAMPLE_TEXT = "---\ntype: Metric\ntitle: Revenue\ntags: [a, b]\nresource: tables/orders.md\n---\n\n# Revenue\n\nSee [x](x.md).\n";

// ------------------------------------------------- 1. the three entries

describe("entries: Node ESM, Node CommonJS and the web build", () => {
  test("package.json maps node import/require and the browser default to files that exist", () => {
    const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
    assert.equal(pkg.name, "@okfit/wasm");
    const dot = pkg.exports["."];
    assert.equal(dot.node.import, "./node.mjs");
    assert.equal(dot.node.require, "./node.cjs");
    assert.equal(dot.default, "./web/okfit_wasm.js");
    for (const f of [dot.types, dot.node.import, dot.node.require, dot.default, ...pkg.files]) {
      assert.ok(existsSync(join(pkgDir, f)), `${f} exists (run scripts/build-wasm.sh)`);
    }
  });

  test("each entry exports init, initSync, validate, parseConcept and manifest", async () => {
    for (const [name, mod] of [["esm", esm], ["cjs", cjs], ["web", web]]) {
      for (const fn of ["default", "initSync", "validate", "parseConcept", "manifest"]) {
        assert.equal(typeof mod[fn], "function", `${name}.${fn}`);
      }
    }
    // In Node the module is ready on import; init()/initSync() exist so browser code runs unchanged.
    assert.equal(init, esm.default);
    await init();
    await cjs.default();
    initSync();
    cjs.initSync();
  });

  test("ESM, CJS and web give identical validate, parseConcept and manifest results", () => {
    const run = (m) => ({
      validateDefault: m.validate({ documents: SAMPLE_DOCS, now: NOW }),
      validateConfig: m.validate({ documents: SAMPLE_DOCS, now: NOW, config: QUIET + 'broken_links = "error"\n' }),
      parse: m.parseConcept(SAMPLE_TEXT, "metrics/revenue.md"),
      parseNoPath: m.parseConcept("---\ntype: A\n---\n"),
      manifest: m.manifest(SAMPLE_DOCS, "acme"),
      errors: [
        () => m.validate({ documents: "nope" }),
        () => m.validate({ documents: [{ path: "../x.md", text: "" }] }),
        () => m.validate({ documents: [], config: "[bundle" }),
        () => m.validate({ documents: [], now: "2026-09-01T00:00:00" }),
      ].map((f) => thrown(f, "entry error").message),
    });
    const a = run(esm);
    const b = run(cjs);
    const c = run(web);
    assertReport(a.validateDefault);
    assert.deepEqual(b, a, "CJS equals ESM");
    assert.deepEqual(c, a, "web equals ESM");
  });

  test("the web build also initialises synchronously from bytes (initSync({module}))", async () => {
    const fresh = await import(new URL("../../npm/wasm/web/okfit_wasm.js?initsync", import.meta.url).href);
    fresh.initSync({ module: webBytes });
    assert.deepEqual(
      fresh.validate({ documents: SAMPLE_DOCS, now: NOW }),
      validate({ documents: SAMPLE_DOCS, now: NOW }),
    );
  });
});

// ---------------------------------------------------------- 2. validate

describe("validate", () => {
  test("a clean bundle under the default profile: exit 0, no diagnostics", () => {
    const r = assertReport(validate({
      now: NOW,
      documents: [
        { path: "index.md", text: '---\nokf_version: "0.2"\n---\n\n# Project\n\n* [Okfit](project.md) - The project.\n' },
        { path: "./project.md", text: "---\ntype: Project\ntitle: Okfit\ndescription: The project.\nstatus: stable\n---\n\n# Okfit\n\nSee [the index](index.md).\n" },
      ],
    }));
    assert.equal(r.profile, "software-project");
    assert.equal(r.okf_version, "0.2");
    assert.equal(r.exit_code, 0);
    assert.deepEqual(r.diagnostics, []);
    assert.deepEqual(r.summary, {
      conformance_errors: 0, lint_errors: 0, lint_warnings: 0, lint_info: 0, profile_errors: 0, concepts: 1,
    });
  });

  test("a clean concept with the profile off: exit 0", () => {
    const r = check([{ path: "metrics/revenue.md", text: "---\ntype: Metric\ntitle: Revenue\n---\n\n# Revenue\n" }]);
    assert.equal(r.exit_code, 0);
    assert.equal(r.profile, null);
    assert.deepEqual(r.diagnostics, []);
    assert.equal(r.summary.concepts, 1);
  });

  test("a concept without type: type-missing (conformance, exit 2, no range as reference §3 says)", () => {
    const r = check([{ path: "a.md", text: "---\ntitle: x\n---\n\nBody.\n" }]);
    assert.equal(r.exit_code, 2);
    assert.equal(r.summary.concepts, 0);
    assert.deepEqual(r.diagnostics, [{
      source: "core.conformance", file: "a.md", code: "type-missing", severity: "error",
      message: "`type` must be a non-empty string",
    }]);
    const notMapping = check([{ path: "b.md", text: "---\n- a\n- b\n---\n" }]);
    assert.deepEqual(notMapping.diagnostics.map((d) => [d.code, d.message]), [["type-missing", "frontmatter is not a mapping"]]);
    const empty = check([{ path: "c.md", text: '---\ntype: ""\n---\n' }]);
    assert.deepEqual(empty.diagnostics.map((d) => [d.code, d.message]), [["type-missing", "`type` must not be empty"]]);
  });

  test("broken YAML: frontmatter-unparseable with a range inside the frontmatter", () => {
    const text = "---\ntype: A\ntitle: [unclosed\n---\n\nBody.\n";
    const r = check([{ path: "dir/bad.md", text }]);
    assert.equal(r.exit_code, 2);
    const [d] = only(r, "frontmatter-unparseable");
    assert.ok(d, `diagnostics: ${JSON.stringify(r.diagnostics)}`);
    assert.equal(d.file, "dir/bad.md");
    assert.equal(d.source, "core.conformance");
    assert.equal(d.severity, "error");
    assert.ok(d.range, "frontmatter-unparseable carries a range");
    assert.ok(d.range.offset >= 4 && d.range.offset + d.range.length <= text.indexOf("\n---\n", 4) + 1,
      `range ${JSON.stringify(d.range)} lies inside the YAML`);
    assert.ok(d.range.line >= 1 && d.range.line <= 2);
    // Duplicate keys make the frontmatter unparseable too (SPEC §2).
    const dup = check([{ path: "d.md", text: "---\ntype: A\ntype: B\n---\n" }]);
    assert.deepEqual(codes(dup), ["d.md frontmatter-unparseable"]);
  });

  test("ranges are UTF-16 code units (JS string offsets)", () => {
    const text = "---\ntype: A\ntitle: \u{1F600}\u00e9\n---\n\n\u{1F600} [gone](gone.md)\n";
    const r = check([{ path: "u.md", text }]);
    const [d] = only(r, "broken-links");
    assert.ok(d?.range, JSON.stringify(r.diagnostics));
    assert.equal(text.slice(d.range.offset, d.range.offset + d.range.length), "[gone](gone.md)");
    assert.equal(d.range.line, 5);
    assert.equal(d.range.character, 3);
  });

  test("config text changes results: the default profile vs profile none", () => {
    const documents = [{ path: "a.md", text: "---\ntype: Metric\n---\n\n# A\n" }];
    const dflt = assertReport(validate({ documents, now: NOW }));
    assert.equal(dflt.profile, "software-project");
    assert.ok(codes(dflt).includes(" project-missing"), codes(dflt).join("\n"));
    assert.equal(dflt.exit_code, 1);
    const none = assertReport(validate({ documents, now: NOW, config: NO_PROFILE }));
    assert.equal(none.profile, null);
    assert.ok(!codes(none).includes(" project-missing"));
    assert.equal(none.summary.profile_errors, 0);
    assert.notDeepEqual(none.diagnostics, dflt.diagnostics);
    // An empty config is the defaults.
    assert.deepEqual(validate({ documents, now: NOW, config: "" }), dflt);
    assert.deepEqual(validate({ documents, now: NOW, config: null }), dflt);
  });

  test("config text changes results: [lint] overrides turn lints off or change their severity", () => {
    const documents = [{ path: "a.md", text: "---\ntype: A\n---\n\nSee [gone](gone.md).\n" }];
    const base = check(documents);
    assert.deepEqual(only(base, "broken-links").map((d) => d.severity), ["warning"]);
    assert.equal(base.exit_code, 0);
    const off = check(documents, { config: QUIET + 'broken_links = "off"\n' });
    assert.deepEqual(only(off, "broken-links"), []);
    const err = check(documents, { config: QUIET + 'broken_links = "error"\n' });
    assert.deepEqual(only(err, "broken-links").map((d) => d.severity), ["error"]);
    assert.equal(err.exit_code, 1);
    // missing_index on by default, off in QUIET.
    const withIndexLint = check(documents, { config: NO_PROFILE });
    assert.deepEqual(only(withIndexLint, "missing-index").map((d) => [d.file, d.message]),
      [["index.md", 'Directory "." has no index.md']]);
  });

  test("config text changes results: [types], concepts.required and unknown keys", () => {
    const documents = [{ path: "a.md", text: "---\ntype: A\n---\n" }];
    const typed = check(documents, { config: QUIET + '[types.B]\ndescription = "b"\n' });
    assert.deepEqual(only(typed, "unknown-type").map((d) => d.message), ['Type "A" is not declared in [types]']);
    const required = check(documents, { config: QUIET + '[concepts]\nrequired = ["owner"]\n' });
    assert.deepEqual(only(required, "required-key-missing").map((d) => d.message), ['Required key "owner" is missing']);
    const unknown = check(documents, { config: 'frobnicate = 1\n' + QUIET });
    assert.deepEqual(only(unknown, "config-unknown-key").map((d) => [d.file, d.severity, d.message]),
      [["", "warning", 'Unknown config key "frobnicate"']]);
    const version = check(documents, { config: 'okf_version = "0.3"\n' + QUIET });
    assert.equal(version.okf_version, "0.3");
  });

  test("malformed TOML or an invalid config value throws an Error naming the config", () => {
    for (const config of ["this is = = not toml", "[bundle\n", '[lint]\nbroken_links = "loud"\n', "[bundle]\nnope = 1\n"]) {
      const e = thrown(() => validate({ documents: [], config }), `config ${JSON.stringify(config)}`);
      assert.match(e.message, /malformed config/, e.message);
      assert.match(e.message, /okfit\.toml/, e.message);
    }
    const e = thrown(() => validate({ documents: [], config: 42 }), "config 42");
    assert.match(e.message, /config/);
  });

  test("now decides staleness (the instant rule now >= stale_after)", () => {
    const documents = [{ path: "s.md", text: "---\ntype: A\nstale_after: 2026-06-01T00:00:00Z\n---\n" }];
    const before = check(documents, { now: "2026-05-31T23:59:59Z" });
    assert.deepEqual(only(before, "stale"), []);
    const at = check(documents, { now: "2026-06-01T02:00:00+02:00" });
    assert.equal(only(at, "stale").length, 1, "exactly at stale_after (with an offset) is stale");
    const after = check(documents, { now: NOW });
    const [d] = only(after, "stale");
    assert.ok(d, JSON.stringify(after.diagnostics));
    assert.equal(d.severity, "info");
    assert.equal(d.message, "Concept is stale since 2026-06-01T00:00:00.000Z");
    assert.ok(d.range);
    assert.equal(documents[0].text.slice(d.range.offset, d.range.offset + d.range.length), "2026-06-01T00:00:00Z");
    // A date-only stale_after is that day at 00:00Z, with the timestamp-date-only warning.
    const dateOnly = check([{ path: "s.md", text: "---\ntype: A\nstale_after: 2026-06-01\n---\n" }]);
    assert.deepEqual(only(dateOnly, "stale").map((x) => x.message), ["Concept is stale since 2026-06-01T00:00:00.000Z"]);
    assert.equal(only(dateOnly, "timestamp-date-only").length, 1);
    // [lint] stale = "off" removes it.
    assert.deepEqual(only(check(documents, { config: QUIET + 'stale = "off"\n' }), "stale"), []);
  });

  test("non-.md paths are assets: links to them are not broken, and they are not concepts", () => {
    const concept = {
      path: "docs/a.md",
      text: "---\ntype: A\nresource: data/t.csv\n---\n\n[table](../data/t.csv) ![logo](img/logo.png) [root](/data/t.csv) [nope](nope.csv)\n",
    };
    const r = check([concept, { path: "data/t.csv", text: "a,b\n1,2\n" }, { path: "docs/img/logo.png", text: "" }]);
    assert.equal(r.summary.concepts, 1);
    assert.deepEqual(only(r, "broken-links").map((d) => d.message), ['Link target "nope.csv" does not exist in the bundle']);
    assert.deepEqual(r.diagnostics.filter((d) => d.file !== "docs/a.md"), [], "assets get no diagnostics");
    // Without the assets the same links are broken.
    const bare = check([concept]);
    assert.deepEqual(only(bare, "broken-links").map((d) => d.message).sort(), [
      'Link target "../data/t.csv" does not exist in the bundle',
      'Link target "/data/t.csv" does not exist in the bundle',
      'Link target "data/t.csv" does not exist in the bundle',
      'Link target "img/logo.png" does not exist in the bundle',
      'Link target "nope.csv" does not exist in the bundle',
    ]);
  });

  test("reserved documents: index.md and log.md are checked, not concepts", () => {
    const r = check([
      { path: "index.md", text: "# Things\n\nNot a list.\n" },
      { path: "log.md", text: "# Log\n\n## yesterday\n\n* x\n" },
      { path: "sub/index.md", text: "---\nokf_version: \"0.2\"\n---\n" },
      { path: "sub/a.md", text: "---\ntype: A\n---\n" },
    ]);
    assert.deepEqual(codes(r).sort(), ["index.md index-malformed", "log.md log-heading-invalid", "sub/index.md index-frontmatter"]);
    assert.equal(r.summary.concepts, 1);
  });

  test("bad options throw an Error with a clear message", () => {
    const cases = [
      [undefined, /documents must be an array/],
      [null, /documents must be an array/],
      ["str", /documents must be an array/],
      [{}, /documents must be an array/],
      [{ documents: "a.md" }, /documents must be an array/],
      [{ documents: { path: "a.md", text: "" } }, /documents must be an array/],
      [{ documents: [{ path: "a.md" }] }, /documents\[0\] must be \{path: string, text: string\}/],
      [{ documents: [{ path: "ok.md", text: "" }, { text: "x" }] }, /documents\[1\]/],
      [{ documents: [{ path: "a.md", text: 5 }] }, /documents\[0\]/],
      [{ documents: [null] }, /documents\[0\]/],
      [{ documents: [{ path: "../a.md", text: "" }] }, /"\.\.\/a\.md".*inside the bundle/],
      [{ documents: [{ path: "x/../../a.md", text: "" }] }, /"x\/\.\.\/\.\.\/a\.md"/],
      [{ documents: [], now: "2026-09-01T00:00:00" }, /now must be an ISO 8601 instant with an explicit offset.*2026-09-01T00:00:00/],
      [{ documents: [], now: "2026-09-01" }, /now must be an ISO 8601 instant/],
      [{ documents: [], now: "yesterday" }, /now must be an ISO 8601 instant/],
    ];
    for (const [options, pattern] of cases) {
      const e = thrown(() => validate(options), `validate(${JSON.stringify(options)})`);
      assert.match(e.message, pattern, `validate(${JSON.stringify(options)})`);
    }
  });

  test("a non-string now throws instead of silently using the clock", () => {
    const failures = [];
    for (const now of [5, true, { at: NOW }, ["2026-09-01T00:00:00Z"]]) {
      try {
        const e = thrown(() => validate({ documents: [], now }), `validate({documents: [], now: ${JSON.stringify(now)}})`);
        assert.match(e.message, /now/);
      } catch (err) {
        failures.push(err.message.split("\n")[0]);
      }
    }
    assert.deepEqual(failures, [], "non-string now values that did not throw");
  });

  test("absolute, backslash, NUL, empty and duplicate paths are rejected (SPEC §9, reference §9)", () => {
    const cases = [
      ["/abs.md", "an absolute path"],
      ["/etc/passwd", "an absolute path outside the bundle"],
      ["metrics\\x.md", "a backslash"],
      ["a\0.md", "a NUL byte"],
      ["", "an empty path"],
      [".", "the bundle root itself"],
    ];
    // Every case is tried, so that a failure lists all the paths let through.
    const failures = [];
    for (const [path, why] of cases) {
      try {
        const e = thrown(() => validate({ documents: [{ path, text: "---\ntype: A\n---\n" }] }),
          `documents[0].path ${JSON.stringify(path)} (${why})`);
        assert.match(e.message, /path/, e.message);
      } catch (err) {
        failures.push(err.message.split("\n")[0]);
      }
    }
    try {
      const dup = thrown(() => validate({
        documents: [{ path: "metrics/a.md", text: "---\ntype: A\n---\n" }, { path: "metrics/./a.md", text: "x" }],
      }), 'documents "metrics/a.md" and "metrics/./a.md" (the same file twice)');
      assert.match(dup.message, /more than once|duplicate/, dup.message);
    } catch (err) {
      failures.push(err.message.split("\n")[0]);
    }
    assert.deepEqual(failures, [], "bad paths that validate() accepted");
  });

  describe("garbage text never throws: it is a report", () => {
    // Deterministic pseudo-random bytes.
    function* prng(seed) {
      let a = seed >>> 0;
      for (;;) {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        yield ((t ^ (t >>> 14)) >>> 0) & 0xff;
      }
    }
    const bytes = (seed, n) => {
      const g = prng(seed);
      return Buffer.from(Array.from({ length: n }, () => g.next().value));
    };
    const laughs = (() => {
      const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
      for (let i = 1; i < 10; i++) {
        const name = String.fromCharCode(97 + i);
        const prev = String.fromCharCode(96 + i);
        lines.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(",")}]`);
      }
      return `---\ntype: A\n${lines.join("\n")}\n---\n`;
    })();
    const garbage = {
      "random bytes as latin1": bytes(1, 8192).toString("latin1"),
      "random bytes as UTF-8 (with U+FFFD)": bytes(2, 8192).toString("utf8"),
      "random bytes inside a frontmatter": `---\n${bytes(3, 4096).toString("latin1")}\n---\n${bytes(4, 4096).toString("latin1")}`,
      "10 KB of --- lines": "---\n".repeat(2560),
      "10 KB of dashes": "-".repeat(10240),
      "10 KB of --- without newlines but CRLF": "---\r\n".repeat(2048),
      "deeply nested flow sequences": `---\ntype: A\nx: ${"[".repeat(5000)}${"]".repeat(5000)}\n---\n`,
      "deeply nested flow mappings": `---\ntype: A\nx: ${"{a: ".repeat(3000)}1${"}".repeat(3000)}\n---\n`,
      "deeply nested block mappings": `---\ntype: A\n${Array.from({ length: 2000 }, (_, i) => `${" ".repeat(i)}k:`).join("\n")} 1\n---\n`,
      "an alias bomb (billion laughs)": laughs,
      "a self-referencing alias": "---\ntype: A\nx: &x [*x]\n---\n",
      "an undefined alias": "---\ntype: A\nx: *nope\n---\n",
      "NUL bytes": "---\ntype: A\0\n---\n\0\0\0",
      "a BOM and CRLF": "\uFEFF---\r\ntype: A\r\n---\r\n# x\r\n",
      "only a BOM": "\uFEFF",
      "an empty file": "",
      "deeply nested Markdown": `---\ntype: A\n---\n${">".repeat(10000)} x\n${"*".repeat(10000)}\n${"[".repeat(10000)}${"](".repeat(5000)}\n`,
      "a 1 MB body": `---\ntype: A\n---\n${"word [l](l.md) ".repeat(70000)}`,
      "astral and combining characters": "---\ntype: \u{1F600}\u0301\ntitle: \u202e\u{10FFFF}\n---\n# \u{1F600}\n[\u{1F600}](\u{1F600}.md)\n",
    };
    for (const [name, text] of Object.entries(garbage)) {
      test(name, () => {
        const r = check([{ path: "g.md", text }, { path: "ok.md", text: "---\ntype: A\n---\n" }], { config: NO_PROFILE });
        assert.ok(r.summary.concepts >= 1, "the sound document is still validated");
        const p = parseConcept(text, "g.md");
        assert.equal(p.path, "g.md");
        assert.ok(Array.isArray(p.diagnostics));
        assert.equal(typeof manifest([{ path: "g.md", text }]), "string");
      });
    }

    test("an alias bomb is a frontmatter-unparseable diagnostic", () => {
      const r = check([{ path: "g.md", text: laughs }]);
      assert.deepEqual(codes(r), ["g.md frontmatter-unparseable"]);
    });

    test("text with lone UTF-16 surrogates (not well-formed Unicode) is a report, as parseConcept handles it", () => {
      // A JS string need not be well-formed UTF-16; the CLI turns ill-formed
      // bytes into a per-file diagnostic and validates the rest.
      const lone = "---\ntype: A\ntitle: \"\uD800\"\n---\n\uDC00 body\n";
      assert.equal(typeof parseConcept(lone, "g.md").kind, "string");
      let random = "";
      const g = prng(9);
      for (let i = 0; i < 4096; i++) random += String.fromCharCode((g.next().value << 8) | g.next().value);
      const failures = [];
      for (const [name, text] of [["lone surrogates", lone], ["random UTF-16 code units", random]]) {
        try {
          const r = validate({ documents: [{ path: "g.md", text }, { path: "ok.md", text: "---\ntype: A\n---\n" }], config: QUIET, now: NOW });
          assertReport(r);
          assert.equal(r.summary.concepts >= 1, true);
        } catch (err) {
          failures.push(`validate() with ${name} in a document's text threw ${err.constructor.name}: ${err.message}`);
        }
      }
      assert.deepEqual(failures, []);
    });
  });
});

// ------------------------------------------------------- 3. parseConcept

describe("parseConcept", () => {
  const text = "---\ntype: Metric\ntitle: Revenue\ndescription: Total revenue.\nstatus: draft\ntags: [finance, kpi]\n"
    + "resource: tables/orders.md\nsources:\n  - resource: data/x.csv\n    id: src1\nverified:\n  by: human:ann\n  at: 2026-01-01T00:00:00Z\n"
    + "stale_after: 2027-06-01T00:00:00Z\ncustom: kept\n---\n\n"
    + "# Revenue\n\nSee [orders](../tables/orders.md \"Orders\"), ![chart](chart.png) and [site](https://example.org).\n"
    + "[ref][r] is skipped.\n\n[r]: other.md\n\n## Detail One\n\n## Detail One\n";

  test("frontmatter, concept fields, links (frontmatter and body) and headings", () => {
    const p = parseConcept(text, "metrics/revenue.md");
    assert.equal(p.path, "metrics/revenue.md");
    assert.equal(p.kind, "concept");
    assert.deepEqual(p.frontmatter, {
      type: "Metric", title: "Revenue", description: "Total revenue.", status: "draft", tags: ["finance", "kpi"],
      resource: "tables/orders.md", sources: [{ resource: "data/x.csv", id: "src1" }],
      verified: { by: "human:ann", at: "2026-01-01T00:00:00Z" },
      stale_after: "2027-06-01T00:00:00Z", custom: "kept",
    });
    const c = p.concept;
    assert.equal(c.id, "metrics/revenue");
    assert.equal(c.type, "Metric");
    assert.equal(c.title, "Revenue");
    assert.equal(c.description, "Total revenue.");
    assert.equal(c.status, "draft");
    assert.deepEqual(c.tags, ["finance", "kpi"]);
    assert.equal(c.stale_after, "2027-06-01T00:00:00.000Z");
    assert.equal(c.trust_tier, "human-reviewed");
    assert.match(c.body_sha256, /^[0-9a-f]{64}$/);
    assert.deepEqual(p.links, [
      { raw: "tables/orders.md", source: "frontmatter", field: "resource" },
      { raw: "data/x.csv", source: "frontmatter", field: "sources.resource" },
      { raw: "../tables/orders.md", source: "body", field: null },
      { raw: "chart.png", source: "body", field: null },
      { raw: "https://example.org", source: "body", field: null },
    ]);
    assert.deepEqual(p.headings, ["revenue", "detail-one", "detail-one-1"]);
    assert.ok(Array.isArray(p.diagnostics));
    assert.ok(p.diagnostics.every((d) => d.file === "metrics/revenue.md"));
  });

  test("a frontmatter of many keys keeps them in order; a duplicate among them is frontmatter-unparseable", () => {
    const keys = Array.from({ length: 40 }, (_, i) => `k${i}: v${i}`).join("\n");
    const p = parseConcept(`---\ntype: Note\nstatus: draft\n${keys}\n---\n# N\n`, "n.md");
    assert.equal(p.kind, "concept");
    assert.deepEqual(Object.keys(p.frontmatter), ["type", "status", ...Array.from({ length: 40 }, (_, i) => `k${i}`)]);
    assert.equal(p.frontmatter.k39, "v39");
    const dup = parseConcept(`---\ntype: Note\n${keys}\nk20: again\n---\n`, "d.md");
    assert.equal(dup.kind, "undecodable");
    assert.ok(dup.diagnostics.some((d) => d.code === "frontmatter-unparseable"));
  });

  test("the body digest is reference §8.1's (body after the closing fence, CRLF and trailing space normalised)", async () => {
    const { createHash } = await import("node:crypto");
    const body = "\n# Title\n\nText.\n";
    const sha = createHash("sha256").update("\n# Title\n\nText.").digest("hex");
    assert.equal(parseConcept(`---\ntype: A\n---\n${body}`).concept.body_sha256, sha);
    assert.equal(parseConcept(`---\r\ntype: A\r\n---\r\n${body.replace(/\n/g, "\r\n")}  \n\n`).concept.body_sha256, sha);
  });

  test("defaults: path concept.md, title from the file stem, status stable, unverified", () => {
    const p = parseConcept("---\ntype: A\n---\n");
    assert.equal(p.path, "concept.md");
    assert.equal(p.kind, "concept");
    assert.equal(p.concept.id, "concept");
    assert.equal(p.concept.title, "concept");
    assert.equal(p.concept.status, "stable");
    assert.equal(p.concept.trust_tier, "unverified");
    assert.deepEqual(p.links, []);
  });

  test("per-file findings come back as diagnostics (family-invalid with a range)", () => {
    const t = "---\ntype: A\ngenerated:\n  by: not an actor\n---\n";
    const p = parseConcept(t, "a.md");
    const d = p.diagnostics.find((x) => x.code === "family-invalid");
    assert.ok(d, JSON.stringify(p.diagnostics));
    // The schema issue text (reference §3), possibly prefixed by the field's path.
    assert.ok(d.message.endsWith("Expected <producer>/<version> or <prefix>:<id> with no whitespace"), d.message);
    assert.ok(t.slice(d.range.offset, d.range.offset + d.range.length).includes("not an actor"), JSON.stringify(d.range));
    assert.ok(d.range);
  });

  test("a file without frontmatter: undecodable, concept null, frontmatter-missing", () => {
    const p = parseConcept("# Just markdown\n\nhello [x](x.md)\n", "plain.md");
    assert.equal(p.kind, "undecodable");
    assert.equal(p.concept, null);
    assert.deepEqual(p.diagnostics, [{
      source: "core.conformance", file: "plain.md", code: "frontmatter-missing", severity: "error",
      message: "concept files must start with a --- frontmatter block",
    }]);
  });

  test("no type or broken YAML: undecodable with the conformance diagnostic; frontmatter when it parsed", () => {
    const noType = parseConcept("---\ntitle: x\n---\n", "t.md");
    assert.equal(noType.kind, "undecodable");
    assert.equal(noType.concept, null);
    assert.deepEqual(noType.frontmatter, { title: "x" });
    assert.deepEqual(noType.diagnostics.map((d) => d.code), ["type-missing"]);
    const bad = parseConcept("---\ntype: [\n---\n", "b.md");
    assert.equal(bad.kind, "undecodable");
    assert.equal(bad.concept, null);
    assert.equal(bad.frontmatter, null);
    assert.deepEqual(bad.diagnostics.map((d) => d.code), ["frontmatter-unparseable"]);
    assert.ok(bad.diagnostics[0].range);
    const unclosed = parseConcept("---\ntype: A\n", "u.md");
    assert.deepEqual(unclosed.diagnostics.map((d) => [d.code, d.range?.offset, d.range?.length]), [["frontmatter-unclosed", 0, 3]]);
  });

  test("reserved names are index and log", () => {
    assert.equal(parseConcept("# T\n\n* [x](x.md)\n", "index.md").kind, "index");
    assert.equal(parseConcept("# Log\n\n## 2026-01-01\n\n* x\n", "sub/log.md").kind, "log");
    assert.deepEqual(parseConcept("# Log\n\n## soon\n", "log.md").diagnostics.map((d) => d.code), ["log-heading-invalid"]);
  });

  test("non-string arguments throw an Error, not a wasm trap or a TypeError", () => {
    const failures = [];
    for (const [expr, pattern] of [
      ["parseConcept(5)", /text/],
      ["parseConcept()", /text/],
      ["parseConcept(null)", /text/],
      ["parseConcept({})", /text/],
      ["parseConcept('---\\ntype: A\\n---\\n', 5)", /path/],
    ]) {
      try {
        assertIsolatedError(expr, pattern);
      } catch (err) {
        failures.push(err.message.split("\n")[0]);
      }
    }
    assert.deepEqual(failures, [], "calls that did not throw a plain Error");
  });
});

// ----------------------------------------------------------- 4. manifest

describe("manifest", () => {
  const HEADER = "id\tbundle\tkind\tstatus\tgrain\tsummary\tlinks";
  const long = "Lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore "
    + "et dolore magna aliqua ut enim ad minim veniam.";
  const docs = [
    {
      path: "tables/orders.md",
      text: "---\ntype: BigQuery Table\ndescription: One row per completed customer order.\ngrain: order_id\n---\n\n"
        + "Joins [customers](customers.md), [m](../metrics/orders.md), [x](./payments.md) and [ext](https://x.org/a.md).\n",
    },
    {
      path: "tables/customers.md",
      text: '---\ntype: BigQuery Table\nstatus: deprecated\ndescription: "Registered customers,\\tincluding\\n  churned."\n'
        + "grain: customer_id\n---\n\nBack to [orders](orders.md) and [self](customers.md).\n",
    },
    {
      path: "metrics/orders.md",
      text: "---\ntype: Metric\nstatus: current\nresource: tables/orders.md\n---\n\n# Orders\n\n> a quote\n\n"
        + "Count of completed orders in the period. More text.\n",
    },
    { path: "metrics/wau.md", text: "---\ntitle: WAU\n---\n\nDistinct user_id seen in a trailing 7 day window.\n" },
    { path: "notes.md", text: "# Notes\n\nPlain markdown without frontmatter.\n" },
    { path: "long.md", text: `---\ntype: Runbook\n---\n\n\`\`\`\nnot this\n\`\`\`\n${long} Second.\n` },
    { path: "old.md", text: "---\ntype: Runbook\nstale_after: 2020-01-01T00:00:00Z\n---\n\nOld.\n" },
    { path: "draft.md", text: "---\ntype: Runbook\nstatus: draft\nstale_after: 2020-01-01T00:00:00Z\n---\n\nDrafted.\n" },
    { path: "index.md", text: "# X\n\n* [o](tables/orders.md)\n" },
    { path: "metrics/log.md", text: "# Log\n" },
    { path: "data/t.csv", text: "a,b\n" },
  ];
  const rows = [
    "customers\tbundle\tbigquery_table\tdeprecated\tcustomer_id\tRegistered customers, including churned.\ttables/orders",
    "draft\tbundle\trunbook\tdraft\t-\tDrafted.\t-",
    "long\tbundle\trunbook\t-\t-\tLorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna…\t-",
    "metrics/orders\tbundle\tmetric\t-\t-\tCount of completed orders in the period.\ttables/orders",
    "notes\tbundle\t-\t-\t-\tPlain markdown without frontmatter.\t-",
    "old\tbundle\trunbook\tstale\t-\tOld.\t-",
    "tables/orders\tbundle\tbigquery_table\t-\torder_id\tOne row per completed customer order.\tcustomers metrics/orders",
    "wau\tbundle\t-\t-\t-\tDistinct user_id seen in a trailing 7 day window.\t-",
  ];

  test("exact TSV: header, kind slugs, - cells, status, summaries, ids and links between documents", () => {
    const tsv = manifest(docs);
    assert.equal(tsv, ["# tenant: preview", "# bundles: bundle", HEADER, ...rows].join("\n") + "\n");
  });

  test("the tenant argument names the tenant; byte-identical for identical input", () => {
    const tsv = manifest(docs, "acme");
    assert.equal(tsv, ["# tenant: acme", "# bundles: bundle", HEADER, ...rows].join("\n") + "\n");
    assert.equal(manifest([...docs].reverse(), "acme"), tsv, "input order does not matter");
  });

  test("per-document bundles: a short id colliding across bundles is prefixed (langonrock §3.3 example)", () => {
    const tsv = manifest([
      { bundle: "sales", path: "orders.md", text: "---\ntype: BigQuery Table\ndescription: One row per completed customer order.\ngrain: order_id\n---\n\n[c](customers.md)\n" },
      { bundle: "sales", path: "customers.md", text: "---\ntype: BigQuery Table\nstatus: deprecated\ndescription: Registered customers, including churned.\ngrain: customer_id\n---\n" },
      { bundle: "ops", path: "orders.md", text: "---\ntype: Runbook\ndescription: How to ship the orders service.\n---\n" },
    ], "acme");
    assert.equal(tsv, [
      "# tenant: acme",
      "# bundles: ops sales",
      HEADER,
      "ops/orders\tops\trunbook\t-\t-\tHow to ship the orders service.\t-",
      "customers\tsales\tbigquery_table\tdeprecated\tcustomer_id\tRegistered customers, including churned.\t-",
      "sales/orders\tsales\tbigquery_table\t-\torder_id\tOne row per completed customer order.\tcustomers",
    ].join("\n") + "\n");
  });

  test("no documents: just the preamble and the header", () => {
    assert.equal(manifest([]), `# tenant: preview\n# bundles:\n${HEADER}\n`);
  });

  test("bad documents throw an Error with a clear message", () => {
    for (const [input, pattern] of [
      ["x", /documents must be an array/],
      [{}, /documents must be an array/],
      [null, /documents must be an array/],
      [[{ path: "a.md" }], /documents\[0\] must be \{path: string, text: string\}/],
      [[{ text: "x" }], /documents\[0\]/],
    ]) {
      const e = thrown(() => manifest(input), `manifest(${JSON.stringify(input)})`);
      assert.match(e.message, pattern);
    }
  });

  test("path traversal and invalid bundle names are rejected (SPEC §9)", () => {
    const failures = [];
    const attempt = (fn, what, pattern) => {
      try {
        assert.match(thrown(fn, what).message, pattern);
      } catch (err) {
        failures.push(err.message.split("\n")[0]);
      }
    };
    for (const path of ["../x.md", "/abs/x.md", "a\\x.md", "a/../../x.md", ""]) {
      attempt(() => manifest([{ path, text: "---\ntype: A\n---\n" }]), `manifest path ${JSON.stringify(path)}`, /path/);
    }
    for (const bundle of ["Bad Name!", "", "../up", "a/b"]) {
      attempt(() => manifest([{ path: "x.md", text: "---\ntype: A\n---\n", bundle }]), `manifest bundle ${JSON.stringify(bundle)}`, /bundle/);
    }
    attempt(() => manifest([{ path: "x.md", text: "---\ntype: A\n---\n" }], "Bad Tenant!"), 'manifest tenant "Bad Tenant!"', /tenant/);
    assert.deepEqual(failures, [], "bad paths, bundle or tenant names that manifest() accepted");
  });

  test("a non-string tenant throws an Error, not a wasm trap", () => {
    assertIsolatedError("manifest([], 5)", /tenant/);
  });
});

// ------------------------------------------------- 5. parity with the CLI

describe("parity with the CLI (okfit validate --format json)", () => {
  for (const name of SAMPLE_BUNDLES) {
    test(`official sample bundle ${name}`, (t) => {
      const dir = join(samples, name);
      if (!existsSync(dir)) {
        t.skip(`sample bundle ${dir} is absent (set OKFIT_SAMPLES); wasm/CLI parity on ${name} not checked`);
        return;
      }
      const documents = documentsOf(dir);
      assert.ok(documents.some((d) => d.path.endsWith(".md")), `${dir} holds Markdown`);
      const wasmReport = assertReport(validate({ documents, now: NOW }), name);
      const project = tempProject();
      try {
        // The CLI's [path] is the project root; the bundle is <root>/okf and no okfit.toml means defaults.
        for (const d of documents) {
          mkdirSync(dirname(join(project, "okf", d.path)), { recursive: true });
          writeFileSync(join(project, "okf", d.path), readFileSync(join(dir, d.path)));
        }
        const cliReport = cliValidate(project);
        assert.equal(cliReport.root, join(project, "okf"));
        assert.equal(cliReport.summary.concepts > 0, true);
        assertParity(wasmReport, cliReport, name);
      } finally {
        rmSync(project, { recursive: true, force: true });
      }
    });
  }

  test("a synthetic project with an okfit.toml, assets, dot-entries and node_modules", () => {
    const config = [
      'okf_version = "0.2"',
      "[bundle]",
      'profile = "none"',
      "[concepts]",
      'required = ["description"]',
      "[lint]",
      'broken_links = "error"',
      'stale = "warn"',
      "[types.Metric]",
      'description = "A number"',
      'required = ["grain"]',
      "[types.Metric.fields.grain]",
      'description = "Row grain"',
      'values = { day = "daily", week = "weekly" }',
      "",
    ].join("\n");
    const files = {
      "okf/index.md": '---\nokf_version: "0.2"\n---\n\n# Metric\n\n* [Revenue](metrics/revenue.md) - Total revenue.\n',
      "okf/metrics/revenue.md": "---\ntype: Metric\ndescription: Total revenue.\ngrain: month\nstale_after: 2026-06-01\n"
        + "resource: ../data/t.csv\n---\n\n# Revenue\n\n[t](../data/t.csv) ![c](chart.png) [gone](gone.md) [a](#nope) [o](/tables/orders.md#columns)\n",
      "okf/metrics/chart.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0xff, 0x00]),
      "okf/tables/orders.md": "\uFEFF---\r\ntype: Table\r\ndescription: Orders.\r\n---\r\n\r\n# Orders\r\n\r\n## Columns\r\n\r\n[up](../index.md)\r\n",
      "okf/tables/notype.md": "---\ntitle: x\n---\n",
      "okf/tables/plain.md": "# no frontmatter\n",
      "okf/tables/bad.md": "---\ntype: [\n---\n",
      "okf/log.md": "---\na: 1\n---\n# Log\n\n## 2026-01-01\n\n* did x\n\n## soon\n",
      "okf/data/t.csv": "a,b\n",
      "okf/data/readme.txt": "hello\n",
      "okf/.hidden.md": "---\ntitle: hidden, not walked\n---\n",
      "okf/.drafts/x.md": "not walked\n",
      "okf/node_modules/pkg/readme.md": "not walked\n",
      "okfit.toml": config,
    };
    const project = tempProject();
    try {
      writeTree(project, files);
      const documents = documentsOf(join(project, "okf"));
      assert.ok(!documents.some((d) => d.path.startsWith(".") || d.path.startsWith("node_modules")));
      const wasmReport = assertReport(validate({ documents, config, now: NOW }), "synthetic");
      assert.ok(wasmReport.diagnostics.length >= 8, JSON.stringify(wasmReport.diagnostics));
      const cliReport = cliValidate(project);
      assertParity(wasmReport, cliReport, "synthetic project");
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });
});

// --------------------------------------------------------- types (d.ts)

test("index.d.ts describes the diagnostics the runtime returns (sources and range shape)", () => {
  const dts = readFileSync(join(pkgDir, "index.d.ts"), "utf8");
  const r = check([
    { path: "a.md", text: "---\ntitle: x\n---\n" },
    { path: "b.md", text: "---\ntype: A\n---\n[g](g.md)\n" },
  ], { config: "" });
  const sources = [...new Set(r.diagnostics.map((d) => d.source))].sort();
  assert.deepEqual(sources, ["core.conformance", "core.lint", "profile"]);
  const decl = dts.match(/interface Diagnostic \{[\s\S]*?\n\}/)?.[0] ?? "";
  for (const s of sources) assert.ok(decl.includes(`'${s}'`) || decl.includes(`"${s}"`), `Diagnostic.source in index.d.ts lists '${s}':\n${decl}`);
  const ranged = r.diagnostics.find((d) => d.range);
  for (const k of Object.keys(ranged.range)) assert.match(decl, new RegExp(`\\b${k}\\b`), `Diagnostic.range in index.d.ts has ${k}:\n${decl}`);
});
