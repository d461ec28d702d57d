// okfit preview: validates one concept as you type, or a whole bundle
// folder, with @okfit/wasm (./pkg, built by scripts/build-wasm.sh).
// No build step and no network besides this folder.

const $ = (id) => document.getElementById(id);
const el = {
  path: $('path'),
  concept: $('concept'),
  config: $('config'),
  configError: $('config-error'),
  status: $('status'),
  timing: $('timing'),
  diagnostics: $('diagnostics'),
  gutter: $('gutter'),
  gutterLines: $('gutter-lines'),
  backdrop: $('backdrop'),
  backdropLines: $('backdrop-lines'),
  folder: $('folder'),
  openFolder: $('open-folder'),
  bundleName: $('bundle-name'),
  bundleSummary: $('bundle-summary'),
  bundleDiagnostics: $('bundle-diagnostics'),
};

const DEBOUNCE_MS = 150;
const SEVERITIES = ['error', 'warning', 'info'];
const RANK = { error: 0, warning: 1, info: 2 };

let okfit = null; // the @okfit/wasm module once loaded

// ---------------------------------------------------------------- loading

async function load() {
  if (window.okfitUnsupported) throw new Error(window.okfitUnsupported);
  let mod;
  try {
    mod = await import('./pkg/okfit_wasm.js');
  } catch (e) {
    throw new Error(`Could not load ./pkg/okfit_wasm.js (${e.message}). Build it with scripts/build-wasm.sh and serve wasm/preview over HTTP.`);
  }
  try {
    await mod.default({ module_or_path: new URL('./pkg/okfit_wasm_bg.wasm', import.meta.url) });
  } catch (e) {
    throw new Error(`Could not load the WebAssembly module pkg/okfit_wasm_bg.wasm (${e.message}). Serve wasm/preview over HTTP after running scripts/build-wasm.sh.`);
  }
  okfit = mod;
  window.okfitWasm = mod; // for the console and the tests
}

function fail(message) {
  if (window.okfitShowUnsupported) window.okfitShowUnsupported(message);
  else setStatus(message, 'error');
  for (const t of [el.path, el.concept, el.config]) t.readOnly = true;
}

// ------------------------------------------------------------ formatting

const plural = (n, one, many) => `${n} ${n === 1 ? one : many}`;

/** "No findings" or "2 errors, 1 warning". */
function countText(diags) {
  const n = { error: 0, warning: 0, info: 0 };
  for (const d of diags) n[d.severity] = (n[d.severity] || 0) + 1;
  const parts = [];
  if (n.error) parts.push(plural(n.error, 'error', 'errors'));
  if (n.warning) parts.push(plural(n.warning, 'warning', 'warnings'));
  if (n.info) parts.push(`${n.info} info`);
  return parts.length ? parts.join(', ') : 'No findings';
}

function worst(diags) {
  let w = null;
  for (const d of diags) if (w === null || RANK[d.severity] < RANK[w]) w = d.severity;
  return w;
}

function setStatus(text, kind) {
  el.status.textContent = text;
  el.status.className = `status status-${kind}`;
}

/** Offsets of each line start; lines end at \r\n, \r or \n as in okfit. */
function lineStarts(text) {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 13) {
      if (text.charCodeAt(i + 1) === 10) i++;
      starts.push(i + 1);
    } else if (c === 10) {
      starts.push(i + 1);
    }
  }
  return starts;
}

/** {line, character} (zero-based) of a UTF-16 offset. */
function position(starts, offset) {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= offset) lo = mid; else hi = mid - 1;
  }
  return { line: lo, character: offset - starts[lo] };
}

/**
 * Start and end offsets of a diagnostic's range in `text`. okfit reports
 * {offset, length, line, character} (UTF-16); {start, end} is accepted too.
 */
function span(range, text, starts) {
  if (!range) return null;
  if (range.start && range.end) {
    const at = (p) => Math.min(text.length, (starts[p.line] ?? text.length) + p.character);
    return { from: at(range.start), to: at(range.end) };
  }
  let from = typeof range.offset === 'number' ? range.offset
    : (starts[range.line] ?? text.length) + (range.character || 0);
  from = Math.max(0, Math.min(text.length, from));
  return { from, to: Math.min(text.length, from + Math.max(0, range.length || 0)) };
}

/** One <li> per diagnostic: "line:column severity code message" (1-based). */
function diagnosticItem(d, location) {
  const li = document.createElement('li');
  li.dataset.code = d.code;
  li.dataset.severity = d.severity;
  li.className = `diag sev-${d.severity}`;
  const parts = [
    ['loc', location],
    ['sev', d.severity],
    ['code', d.code],
    ['msg', d.message],
  ];
  parts.forEach(([cls, text], i) => {
    if (i) li.append(' ');
    const s = document.createElement(cls === 'code' ? 'code' : 'span');
    s.className = cls;
    s.textContent = text;
    li.append(s);
  });
  return li;
}

function rangeLocation(range) {
  if (!range) return null;
  const p = range.start || range;
  return `${p.line + 1}:${p.character + 1}`;
}

// --------------------------------------------------------- one concept

let conceptDiags = []; // [{d, from, to}] of the last run, for highlighting

function configText() {
  const t = el.config.value;
  return t.trim() === '' ? undefined : t;
}

function showConfigError(message) {
  el.configError.textContent = message;
  el.configError.hidden = !message;
  el.config.classList.toggle('invalid', !!message);
}

function validateConcept() {
  if (!okfit) return;
  const path = el.path.value.trim();
  const text = el.concept.value;
  el.path.classList.remove('invalid');
  if (path === '' || !path.endsWith('.md')) {
    el.path.classList.add('invalid');
    renderConcept([], text);
    el.timing.textContent = '';
    setStatus(path === ''
      ? 'Enter the concept\'s path in the bundle, for example concepts/example.md.'
      : `The path "${path}" must end in .md to be read as a concept; other files are assets.`, 'error');
    return;
  }
  let report;
  const t0 = performance.now();
  try {
    report = okfit.validate({ documents: [{ path, text }], config: configText() });
  } catch (e) {
    const message = String(e && e.message || e);
    renderConcept([], text);
    el.timing.textContent = '';
    if (/^malformed config|okfit\.toml/.test(message)) {
      showConfigError(message);
      setStatus(`okfit.toml error: ${message}`, 'error');
    } else {
      showConfigError('');
      if (/path/.test(message)) el.path.classList.add('invalid');
      setStatus(message, 'error');
    }
    return;
  }
  const ms = performance.now() - t0;
  showConfigError('');
  const diags = report.diagnostics || [];
  renderConcept(diags, text);
  const w = worst(diags);
  setStatus(countText(diags), w === null ? 'ok' : w);
  el.timing.textContent = `exit code ${report.exit_code} · validated in ${ms < 1 ? ms.toFixed(2) : ms.toFixed(1)} ms`;
}

function renderConcept(diags, text) {
  const starts = lineStarts(text);
  conceptDiags = diags.map((d) => {
    const s = d.file !== '' ? span(d.range, text, starts) : null;
    return { d, from: s ? s.from : null, to: s ? s.to : null };
  });
  const frag = document.createDocumentFragment();
  for (const { d, from } of conceptDiags) {
    const loc = from !== null ? rangeLocation(d.range) : (d.file === '' ? '(bundle)' : d.file);
    const li = diagnosticItem(d, loc);
    if (from !== null) {
      li.dataset.line = String(position(starts, from).line + 1);
      li.tabIndex = 0;
      li.title = 'Select this finding\'s text in the editor';
    }
    frag.append(li);
  }
  el.diagnostics.replaceChildren(frag);
  renderHighlights(text, starts);
}

/** The gutter (line numbers, markers) and the backdrop behind the textarea. */
function renderHighlights(text, starts) {
  const lines = starts.map((s, i) => {
    const end = i + 1 < starts.length ? starts[i + 1] : text.length;
    let t = text.slice(s, end);
    t = t.replace(/\r?\n$|\r$/, '');
    return { start: s, text: t, severity: null, marks: [] };
  });
  for (const { d, from, to } of conceptDiags) {
    if (from === null) continue;
    const a = position(starts, from).line;
    const b = position(starts, Math.max(from, to - 1)).line;
    for (let l = a; l <= b && l < lines.length; l++) {
      const line = lines[l];
      if (line.severity === null || RANK[d.severity] < RANK[line.severity]) line.severity = d.severity;
      const s = Math.max(from, line.start) - line.start;
      const e = Math.min(to, line.start + line.text.length) - line.start;
      if (e > s) line.marks.push({ s, e, severity: d.severity });
    }
  }
  const gutter = document.createDocumentFragment();
  const back = document.createDocumentFragment();
  lines.forEach((line, i) => {
    const g = document.createElement('div');
    g.className = line.severity ? `ln sev-${line.severity}` : 'ln';
    g.textContent = String(i + 1);
    gutter.append(g);
    const b = document.createElement('div');
    b.className = line.severity ? `ln sev-${line.severity}` : 'ln';
    // Non-overlapping underlines, most severe first.
    const marks = line.marks.sort((x, y) => RANK[x.severity] - RANK[y.severity] || x.s - y.s);
    const taken = [];
    for (const m of marks) {
      if (taken.every((t) => m.e <= t.s || m.s >= t.e)) taken.push(m);
    }
    taken.sort((x, y) => x.s - y.s);
    let at = 0;
    for (const m of taken) {
      if (m.s > at) b.append(line.text.slice(at, m.s));
      const mark = document.createElement('mark');
      mark.className = `sq sev-${m.severity}`;
      mark.textContent = line.text.slice(m.s, m.e);
      b.append(mark);
      at = m.e;
    }
    if (at < line.text.length) b.append(line.text.slice(at));
    back.append(b);
  });
  el.gutterLines.replaceChildren(gutter);
  el.gutter.parentElement.style.setProperty('--digits', String(Math.max(2, String(lines.length).length)));
  el.backdropLines.replaceChildren(back);
  syncScroll();
}

function syncScroll() {
  el.backdrop.scrollTop = el.concept.scrollTop;
  el.backdrop.scrollLeft = el.concept.scrollLeft;
  el.gutter.scrollTop = el.concept.scrollTop;
}

function selectFinding(li) {
  const i = Array.prototype.indexOf.call(el.diagnostics.children, li);
  const item = conceptDiags[i];
  if (!item || item.from === null) return;
  el.concept.focus();
  el.concept.setSelectionRange(item.from, Math.max(item.from, item.to));
  // Bring the line into view: the textarea scrolls to the caret on focus.
  const line = Number(li.dataset.line || 1) - 1;
  const lh = parseFloat(getComputedStyle(el.concept).lineHeight) || 20;
  const top = line * lh;
  if (top < el.concept.scrollTop || top > el.concept.scrollTop + el.concept.clientHeight - 2 * lh) {
    el.concept.scrollTop = Math.max(0, top - el.concept.clientHeight / 3);
  }
  syncScroll();
}

// --------------------------------------------------------------- bundle

let bundle = null; // {name, documents, configText, configSource, note, counts}

const SKIP_DIRS = new Set(['node_modules', '.git']);
const CONFIG_NAMES = ['.okfit.toml', 'okfit.toml', '.config/okfit.toml'];

/**
 * The `[bundle] path` of okfit.toml text (default "okf"), read line by line.
 * Only this key is needed here; okfit itself parses and checks the file.
 */
function bundlePathOf(toml) {
  let table = '';
  for (const raw of toml.split(/\r\n|\r|\n/)) {
    const line = raw.trim();
    const header = /^\[\s*([^\]\s]+)\s*\]/.exec(line);
    if (header) { table = header[1]; continue; }
    const key = table === 'bundle' ? /^path\s*=\s*(.*)$/.exec(line)
      : table === '' ? /^bundle\.path\s*=\s*(.*)$/.exec(line) : null;
    if (!key) continue;
    const v = key[1];
    let m = /^"((?:[^"\\]|\\.)*)"/.exec(v);
    if (m) { try { return JSON.parse(`"${m[1]}"`); } catch { return m[1]; } }
    m = /^'([^']*)'/.exec(v);
    if (m) return m[1];
  }
  return 'okf';
}

function cleanDir(p) {
  const parts = [];
  for (const seg of p.replace(/\\/g, '/').split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') { if (!parts.length) return null; parts.pop(); continue; }
    parts.push(seg);
  }
  return parts.join('/');
}

async function openFolder(fileList) {
  const files = Array.from(fileList || []);
  if (!files.length) return;
  // Paths relative to the chosen folder: webkitRelativePath is "<folder>/<rest>".
  const entries = files.map((f) => {
    const rel = (f.webkitRelativePath || f.name).replace(/\\/g, '/');
    const cut = rel.indexOf('/');
    return { file: f, root: cut >= 0 ? rel.slice(0, cut) : '', path: cut >= 0 ? rel.slice(cut + 1) : rel };
  }).filter((e) => e.path !== '');
  const name = (entries[0] && entries[0].root) || 'folder';
  el.bundleName.textContent = name;
  el.bundleSummary.className = 'bundle-summary';
  el.bundleSummary.textContent = `Reading ${plural(files.length, 'file', 'files')}…`;
  el.bundleDiagnostics.replaceChildren();

  // A project folder: its okfit.toml says where the bundle is, as for the CLI.
  let configTextFromFolder;
  let configSource = null;
  let prefix = '';
  let note = '';
  for (const n of CONFIG_NAMES) {
    const hit = entries.find((e) => e.path === n);
    if (hit) {
      configTextFromFolder = await hit.file.text();
      configSource = n;
      const bp = bundlePathOf(configTextFromFolder);
      // The project root is the chosen folder (also for .config/okfit.toml).
      const dir = cleanDir(bp);
      if (dir === null) {
        note = `${n} puts the bundle at "${bp}", outside the chosen folder; validated the folder itself.`;
      } else if (dir !== '' && !entries.some((e) => e.path.startsWith(`${dir}/`))) {
        note = `${n} puts the bundle in "${dir}/", which has no files; validated the folder itself.`;
      } else {
        prefix = dir;
      }
      break;
    }
  }
  const inBundle = [];
  for (const e of entries) {
    let p = e.path;
    if (prefix) {
      if (!p.startsWith(`${prefix}/`)) continue;
      p = p.slice(prefix.length + 1);
    }
    // Dot-entries, node_modules and .git are not part of a bundle.
    if (p.split('/').some((seg) => seg.startsWith('.') || SKIP_DIRS.has(seg))) continue;
    inBundle.push({ file: e.file, path: p });
  }
  inBundle.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const documents = await Promise.all(inBundle.map(async ({ file, path }) => ({
    path,
    text: path.endsWith('.md') ? await file.text() : '',
  })));
  const markdown = documents.filter((d) => d.path.endsWith('.md')).length;
  bundle = {
    name,
    prefix,
    documents,
    configText: configTextFromFolder,
    configSource,
    note,
    counts: { markdown, assets: documents.length - markdown },
  };
  validateBundle();
}

function validateBundle() {
  if (!okfit || !bundle) return;
  const b = bundle;
  const config = b.configSource ? b.configText : configText();
  const configWord = b.configSource ? `config: ${b.configSource} from the folder`
    : config === undefined ? 'config: okfit defaults' : 'config: the okfit.toml box above';
  const where = b.prefix ? `bundle ${b.prefix}/` : 'bundle at the folder root';
  const files = `${plural(b.documents.length, 'file', 'files')} (${b.counts.markdown} Markdown, ${plural(b.counts.assets, 'asset', 'assets')})`;
  let report;
  const t0 = performance.now();
  try {
    report = okfit.validate({ documents: b.documents, config });
  } catch (e) {
    el.bundleDiagnostics.replaceChildren();
    el.bundleSummary.className = 'bundle-summary status-error';
    el.bundleSummary.textContent = `${b.name}: ${String(e && e.message || e)} (${configWord})`;
    return;
  }
  const ms = performance.now() - t0;
  const diags = report.diagnostics || [];
  const w = worst(diags);
  el.bundleSummary.className = 'bundle-summary';
  const head = document.createElement('strong');
  head.className = `status-${w === null ? 'ok' : w}`;
  head.textContent = `${b.name}: ${countText(diags)}`;
  const details = document.createElement('span');
  details.className = 'details';
  details.textContent = ` · ${plural(report.summary.concepts, 'concept', 'concepts')} in ${files} · `
    + `exit code ${report.exit_code} · ${where} · ${configWord} · ${ms.toFixed(1)} ms`;
  el.bundleSummary.replaceChildren(head, details);
  if (b.note) {
    const note = document.createElement('span');
    note.className = 'note';
    note.textContent = ` · ${b.note}`;
    el.bundleSummary.append(note);
  }

  // Grouped by file, in okfit's order (bundle-level findings first).
  const groups = new Map();
  for (const d of diags) {
    if (!groups.has(d.file)) groups.set(d.file, []);
    groups.get(d.file).push(d);
  }
  const frag = document.createDocumentFragment();
  for (const [file, list] of groups) {
    const g = document.createElement('details');
    g.open = true;
    g.className = `file-group sev-${worst(list)}`;
    g.dataset.file = file;
    const s = document.createElement('summary');
    const name = document.createElement('code');
    name.className = 'file';
    name.textContent = file === '' ? '(bundle)' : file;
    const counts = document.createElement('span');
    counts.className = 'counts';
    counts.textContent = countText(list);
    s.append(name, ' ', counts);
    const ul = document.createElement('ul');
    ul.className = 'diagnostics';
    for (const d of list) ul.append(diagnosticItem(d, rangeLocation(d.range) || '—'));
    g.append(s, ul);
    frag.append(g);
  }
  const clean = b.documents.filter((d) => d.path.endsWith('.md') && !groups.has(d.path)).length;
  if (clean) {
    const p = document.createElement('p');
    p.className = 'clean';
    p.textContent = groups.size
      ? `${plural(clean, 'other Markdown file has', 'other Markdown files have')} no findings.`
      : `All ${plural(clean, 'Markdown file', 'Markdown files')} pass with no findings.`;
    frag.append(p);
  }
  el.bundleDiagnostics.replaceChildren(frag);
}

// ------------------------------------------------------------ benchmark

/**
 * An n-concept bundle in memory: valid Metric concepts in folders of 20,
 * each linking to three others (one with a heading anchor), an index.md per
 * folder and a root index.md; with the config that declares the type.
 */
function makeBenchBundle(n) {
  const documents = [];
  const folders = Math.max(1, Math.ceil(n / 20));
  const pad = (i) => String(i).padStart(4, '0');
  const dir = (i) => `area-${pad(i % folders)}`;
  const id = (i) => `${dir(i)}/metric-${pad(i)}`;
  const rel = (from, to) => (dir(from) === dir(to) ? `metric-${pad(to)}.md` : `../${id(to)}.md`);
  const byDir = new Map();
  for (let i = 0; i < n; i++) {
    const links = [(i + 1) % n, (i + 7) % n, (i + 31) % n].filter((j) => j !== i);
    const body = [
      `# Metric ${i}`,
      '',
      `Metric ${i} counts one thing the team tracks, sampled every day at midnight UTC and kept for`,
      'two years. It is derived from the events table and reviewed every quarter by its owner.',
      '',
      '## Definition',
      '',
      'The number of distinct accounts that did the thing at least once in the window. Accounts',
      'created by automated tests are excluded; merged accounts count once.',
      '',
      '## Related',
      '',
      ...links.map((j, k) => `- [Metric ${j}](${rel(i, j)}${k === 0 ? '#definition' : ''}) - how it relates to this one.`),
      '',
      '## Caveats',
      '',
      'Late-arriving events are counted on the day they arrive, so the last two days move a little.',
      '',
    ].join('\n');
    const text = [
      '---',
      'type: Metric',
      `title: Metric ${i}`,
      `description: Metric number ${i} of the benchmark bundle, with links to related metrics.`,
      'status: stable',
      'tags:',
      `  - ${i % 2 ? 'growth' : 'finance'}`,
      '---',
      '',
      body,
    ].join('\n');
    documents.push({ path: `${id(i)}.md`, text });
    if (!byDir.has(dir(i))) byDir.set(dir(i), []);
    byDir.get(dir(i)).push(i);
  }
  const root = ['---', 'okf_version: "0.2"', '---', '', '# Subdirectories', ''];
  for (const [d, list] of [...byDir].sort()) {
    root.push(`* [${d}](${d}/index.md)`);
    const idx = ['# Metric', '', ...list.map((i) => `* [Metric ${i}](metric-${pad(i)}.md) - Metric number ${i}.`), ''];
    documents.push({ path: `${d}/index.md`, text: idx.join('\n') });
  }
  root.push('');
  documents.push({ path: 'index.md', text: root.join('\n') });
  const config = [
    '[bundle]',
    'profile = "none"',
    '',
    '[types.Metric]',
    'description = "A number the team tracks."',
    '',
    '[tags.growth]',
    'description = "Acquisition and retention."',
    '',
    '[tags.finance]',
    'description = "Money."',
    '',
  ].join('\n');
  return { documents, config };
}

/** Median milliseconds of 11 validate() runs over an n-concept bundle (after one warm-up run). */
async function okfitBench(n = 100) {
  await window.okfitReady;
  const options = makeBenchBundle(n);
  okfit.validate(options);
  const times = [];
  for (let i = 0; i < 11; i++) {
    const t0 = performance.now();
    okfit.validate(options);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[5];
}

// --------------------------------------------------------------- wiring

function debounce(fn, ms) {
  let timer = 0;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(fn, ms);
  };
}

const revalidate = debounce(validateConcept, DEBOUNCE_MS);
const revalidateAll = debounce(() => {
  validateConcept();
  if (bundle && !bundle.configSource) validateBundle();
}, DEBOUNCE_MS);

el.path.addEventListener('input', revalidate);
el.concept.addEventListener('input', () => {
  // Keep the gutter's line count in step at once; findings follow the debounce.
  if (el.gutterLines.childElementCount !== lineStarts(el.concept.value).length) {
    renderHighlights(el.concept.value, lineStarts(el.concept.value));
  }
  revalidate();
});
el.config.addEventListener('input', revalidateAll);
el.concept.addEventListener('scroll', syncScroll);
el.diagnostics.addEventListener('click', (e) => {
  const li = e.target.closest('li');
  if (li && li.dataset.line) selectFinding(li);
});
el.diagnostics.addEventListener('keydown', (e) => {
  const li = e.target.closest('li');
  if (li && li.dataset.line && (e.key === 'Enter' || e.key === ' ')) {
    e.preventDefault();
    selectFinding(li);
  }
});
el.folder.addEventListener('change', () => {
  openFolder(el.folder.files).catch((e) => {
    el.bundleSummary.className = 'bundle-summary status-error';
    el.bundleSummary.textContent = `Could not read the folder: ${e.message}`;
  });
});
el.openFolder.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' || e.key === ' ') {
    e.preventDefault();
    el.folder.click();
  }
});
if (!('webkitdirectory' in el.folder)) {
  el.openFolder.classList.add('disabled');
  el.bundleSummary.textContent = 'This browser cannot open folders (no webkitdirectory support).';
}

window.okfitBench = okfitBench;
window.okfitBenchBundle = makeBenchBundle;
window.okfitReady = (async () => {
  renderHighlights(el.concept.value, lineStarts(el.concept.value));
  try {
    await load();
  } catch (e) {
    fail(e.message);
    throw e;
  }
  validateConcept();
  if (el.folder.files && el.folder.files.length) await openFolder(el.folder.files);
  return true;
})();
// Callers await it; the page itself has reported any failure already.
window.okfitReady.catch(() => {});
