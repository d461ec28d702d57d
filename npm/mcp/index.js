'use strict';
// @okfit/mcp: the okfit MCP server, connections and validator for Node.
// The work is done by the native addon; this file loads the one built for
// this platform and gives it a JavaScript shape.

const { join } = require('node:path');

function target() {
  const { platform, arch } = process;
  if (platform === 'linux') {
    let glibc = true;
    try {
      const report = process.report && process.report.getReport();
      glibc = Boolean(report && report.header && report.header.glibcVersionRuntime);
    } catch (_) {
      glibc = true;
    }
    return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`;
  }
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

function loadBinding() {
  const t = target();
  const tries = [];
  if (process.env.OKFIT_NAPI_PATH) tries.push(process.env.OKFIT_NAPI_PATH);
  tries.push(join(__dirname, `okfit.${t}.node`));
  tries.push(`@okfit/mcp-${t}`);
  // A checkout of the repository: the platform package beside this one.
  tries.push(join(__dirname, '..', `mcp-${t}`, `okfit.${t}.node`));
  const errors = [];
  for (const p of tries) {
    try {
      return require(p);
    } catch (e) {
      errors.push(`${p}: ${e.message.split('\n')[0]}`);
    }
  }
  const err = new Error(
    `@okfit/mcp has no native addon for ${t}: install @okfit/mcp-${t} (npm installs it with @okfit/mcp on supported platforms). Tried:\n  ${errors.join('\n  ')}`,
  );
  throw err;
}

const native = loadBinding();

/** Failure of a knowledge tool: the text the MCP tool answers with. */
class OkfitError extends Error {
  constructor(message) {
    super(message);
    this.name = 'OkfitError';
    const m = /retry with replaces: "([0-9a-f]{64})"/.exec(message);
    if (m) this.replaces = m[1];
  }
}

/** Knowledge behind a connection string, with async methods mirroring the tools. */
class Connection {
  constructor(inner) {
    this._inner = inner;
  }
  get dsn() {
    return this._inner.dsn;
  }
  async _call(tool, args) {
    const clean = {};
    for (const [k, v] of Object.entries(args || {})) if (v !== undefined && v !== null) clean[k] = v;
    const r = await this._inner.call(tool, clean);
    if (r.isError) throw new OkfitError(r.text);
    return r.text;
  }
  manifest(bundle) {
    return this._call('manifest', { bundle });
  }
  search(query, options = {}) {
    return this._call('search', { query, k: options.k, bundle: options.bundle });
  }
  get(ids, options = {}) {
    return this._call('get', {
      ids: Array.isArray(ids) ? ids : [ids],
      section: options.section,
      offset: options.offset,
      limit: options.limit,
      find: options.find,
    });
  }
  snapshot() {
    return this._call('snapshot', {});
  }
  write(bundle, path, content, replaces) {
    return this._call('write', { bundle, path, content, replaces });
  }
  delete(bundle, path, replaces) {
    return this._call('delete', { bundle, path, replaces });
  }
  async transact(changes, expectedRevision) {
    return JSON.parse(await this._call('transact', { changes, expectedRevision }));
  }
  async history(options = {}) {
    return JSON.parse(await this._call('history', { before: options.before, limit: options.limit }));
  }
  async restore(revision, expectedRevision) {
    return JSON.parse(await this._call('restore', { revision, expectedRevision }));
  }
  async close() {
    this._inner.close();
  }
}

/** Opens a connection (okf:///abs/bundle, okf:///abs/data?tenant=t, okf+unix://…, okf+https://…). */
async function open(dsn) {
  return new Connection(native.openNative(String(dsn)));
}

/** An MCP server: the okfit-mcp tools behind any @modelcontextprotocol/sdk Transport. */
class McpServer {
  constructor(inner) {
    this._inner = inner;
    this._sessions = new Set();
  }

  /** Serves one client over `transport` (stdio, Streamable HTTP, in-memory, …). */
  async connect(transport) {
    const entry = { transport, session: null, closed: false };
    const end = () => {
      if (entry.closed) return;
      entry.closed = true;
      this._sessions.delete(entry);
      if (entry.session) entry.session.close();
    };
    entry.session = this._inner.open((json) => {
      if (json === null || json === undefined) {
        if (!entry.closed) {
          entry.closed = true;
          this._sessions.delete(entry);
          Promise.resolve(transport.close()).catch(() => {});
        }
        return;
      }
      Promise.resolve(transport.send(JSON.parse(json))).catch((e) => transport.onerror && transport.onerror(e));
    });
    transport.onmessage = (message) => {
      try {
        entry.session.send(JSON.stringify(message));
      } catch (e) {
        if (transport.onerror) transport.onerror(e);
      }
    };
    const prevClose = transport.onclose;
    transport.onclose = () => {
      end();
      if (prevClose) prevClose();
    };
    this._sessions.add(entry);
    await transport.start();
  }

  /** Ends every session. */
  async close() {
    const all = [...this._sessions];
    for (const entry of all) {
      entry.closed = true;
      this._sessions.delete(entry);
      entry.session.close();
      await Promise.resolve(entry.transport.close()).catch(() => {});
    }
  }

  /** Serves this process's stdin/stdout exactly as the okfit-mcp binary does; resolves with its exit code. */
  serveStdio() {
    return this._inner.serveStdio();
  }
}

/**
 * createMcpServer(connection?, advice?, options?): `connection` is a
 * connection string or a Connection from open(); none serves the project's
 * bundle (OKFIT_PROJECT_DIR, else CLAUDE_PROJECT_DIR, else the cwd).
 */
function createMcpServer(connection, advice, options) {
  const dsn = connection == null ? null : typeof connection === 'string' ? connection : connection.dsn;
  return new McpServer(native.createNativeServer(dsn || null, advice == null ? null : String(advice), options || null));
}

/** The JSON envelope of `okfit validate --format json`; `documents` are overlaid, never written. */
async function validate(options = {}) {
  const args = {};
  if (options.documents) args.documents = options.documents;
  if (options.now) args.now = options.now;
  return native.validateNative(options.root == null ? null : String(options.root), args);
}

module.exports = { createMcpServer, open, validate, McpServer, Connection, OkfitError, _native: native };
