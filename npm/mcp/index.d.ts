// Types of @okfit/mcp.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';

export interface ServerOptions {
  /** Add the database tools (transact, history, restore). */
  databaseTools?: boolean;
  /** Serve exactly these tools from the catalogue. */
  tools?: string[];
  /** Drop every tool that writes. */
  readOnly?: boolean;
}

export declare class McpServer {
  /** Serves one client over any @modelcontextprotocol/sdk Transport. */
  connect(transport: Transport): Promise<void>;
  /** Ends every session. */
  close(): Promise<void>;
  /** Serves this process's stdin/stdout as the okfit-mcp binary does; resolves with its exit code. */
  serveStdio(): Promise<number>;
}

export declare class OkfitError extends Error {
  /** The hash to retry with, when the refusal names one. */
  replaces?: string;
}

export interface DocumentChange {
  operation: 'write' | 'delete';
  bundle: string;
  path: string;
  content?: string;
  replaces?: string;
}

export interface RevisionResult {
  revision: string | null;
  snapshot: string;
  concepts: number;
  bundles: string[];
  diagnostics: { level: string; path: string; message: string }[];
}

export interface RevisionInfo {
  revision: string;
  parent: string | null;
  snapshot: string;
  created: string;
  concepts: number;
  bundles: string[];
}

export declare class Connection {
  readonly dsn: string;
  manifest(bundle?: string): Promise<string>;
  search(query: string, options?: { k?: number; bundle?: string }): Promise<string>;
  get(ids: string | string[], options?: { section?: string; offset?: number; limit?: number; find?: string }): Promise<string>;
  snapshot(): Promise<string>;
  write(bundle: string, path: string, content: string, replaces?: string): Promise<string>;
  delete(bundle: string, path: string, replaces?: string): Promise<string>;
  transact(changes: DocumentChange[], expectedRevision?: string): Promise<RevisionResult>;
  history(options?: { before?: string; limit?: number }): Promise<{ revisions: RevisionInfo[]; next?: string }>;
  restore(revision: string, expectedRevision: string): Promise<RevisionResult>;
  close(): Promise<void>;
}

export declare function createMcpServer(
  connection?: string | Connection | null,
  advice?: string | null,
  options?: ServerOptions | null,
): McpServer;

export declare function open(dsn: string): Promise<Connection>;

export interface Diagnostic {
  file: string;
  code: string;
  severity: 'error' | 'warning' | 'info';
  message: string;
  source: 'core.conformance' | 'core.lint' | 'profile';
  range?: { offset: number; length: number; line: number; character: number };
}

export interface Report {
  schema: number;
  exit_code: number;
  diagnostics: Diagnostic[];
  summary: Record<string, number>;
  [key: string]: unknown;
}

export declare function validate(options?: {
  root?: string;
  documents?: { path: string; text: string }[];
  now?: string;
}): Promise<Report>;
