// Types of @okfit/mcp (mcp.js). Every option object, answer and report is
// declared in index.d.ts, which `napi build` generates from the addon's
// Rust types; this file declares only what mcp.js adds in JavaScript.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type {
  DocumentChange,
  GetOptions,
  History,
  HistoryOptions,
  RevisionResult,
  SearchOptions,
  ServerOptions,
} from './index.js';

export type {
  ChangeDiagnostic,
  Diagnostic,
  DiagnosticRange,
  Distribution,
  DocumentChange,
  GetOptions,
  History,
  HistoryOptions,
  Launcher,
  Report,
  RevisionInfo,
  RevisionResult,
  SearchOptions,
  ServerOptions,
  Summary,
  UnsavedDocument,
  ValidateOptions,
} from './index.js';
export { validate, runCli } from './index.js';

/** An MCP server: the okfit-mcp tools behind any @modelcontextprotocol/sdk Transport. */
export declare class McpServer {
  private constructor();
  /** Serves one client over any @modelcontextprotocol/sdk Transport. */
  connect(transport: Transport): Promise<void>;
  /** Ends every session. */
  close(): Promise<void>;
  /** Serves this process's stdin/stdout as the okfit-mcp binary does; resolves with its exit code. */
  serveStdio(): Promise<number>;
}

/** A knowledge tool's refusal: the text the MCP tool answers with. */
export declare class OkfitError extends Error {
  constructor(message: string);
  /** The hash to retry with, when the refusal names one. */
  replaces?: string;
}

/**
 * Knowledge behind a connection string. Each method is the MCP tool of the
 * same name; a refusal rejects with an OkfitError, arguments the tool's
 * schema rejects with an Error of code `InvalidArg`.
 */
export declare class Connection {
  private constructor();
  /** The connection string. */
  readonly dsn: string;
  manifest(bundle?: string | null): Promise<string>;
  search(query: string, options?: SearchOptions | null): Promise<string>;
  get(ids: string | string[], options?: GetOptions | null): Promise<string>;
  snapshot(): Promise<string>;
  write(bundle: string, path: string, content: string, replaces?: string | null): Promise<string>;
  delete(bundle: string, path: string, replaces?: string | null): Promise<string>;
  transact(changes: DocumentChange[], expectedRevision?: string | null): Promise<RevisionResult>;
  history(options?: HistoryOptions | null): Promise<History>;
  restore(revision: string, expectedRevision: string): Promise<RevisionResult>;
  /** Releases the connection. */
  close(): Promise<void>;
}

/**
 * An MCP server over `connection` (a connection string or a Connection from
 * open()); none serves the project's bundle (OKFIT_PROJECT_DIR, else
 * CLAUDE_PROJECT_DIR, else the working directory). `advice` replaces the
 * computed advice sentence of the tool descriptions.
 */
export declare function createMcpServer(
  connection?: string | Connection | null,
  advice?: string | null,
  options?: ServerOptions | null,
): McpServer;

/** Opens a connection (okf:///abs/bundle, okf:///abs/data?tenant=t, okf+unix://…, okf+https://…). */
export declare function open(dsn: string): Promise<Connection>;
