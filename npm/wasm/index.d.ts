// Types of @okfit/wasm.

export interface Document {
  /** Path relative to the bundle root (".md" files are documents, other paths are assets). */
  path: string;
  /** The file's full text. */
  text: string;
}

export interface Diagnostic {
  source: 'core.conformance' | 'core.lint' | 'profile';
  file: string;
  code: string;
  severity: 'error' | 'warning' | 'info';
  message: string;
  /** UTF-16 offset and length in the file; zero-based line and character of the start. */
  range?: { offset: number; length: number; line: number; character: number };
}

/** The JSON envelope of `okfit validate --format json` (schema 1). */
export interface Report {
  schema: number;
  exit_code: number;
  diagnostics: Diagnostic[];
  summary: Record<string, number>;
  [key: string]: unknown;
}

/** Loads the WebAssembly module (browsers); a no-op in Node. */
export default function init(input?: unknown): Promise<unknown>;
export function initSync(input?: unknown): unknown;

/** Validates documents as the CLI would, with no server. `config` is okfit.toml text; `now` an ISO 8601 instant. */
export function validate(options: { documents: Document[]; config?: string; now?: string }): Report;

/** What okfit reads from one file: frontmatter, the concept model, links, headings and per-file findings. */
export function parseConcept(text: string, path?: string): {
  path: string;
  kind: 'concept' | 'undecodable' | 'index' | 'log';
  concept: null | Record<string, unknown>;
  frontmatter: null | Record<string, unknown>;
  links: { raw: string; source: 'frontmatter' | 'body'; field: string | null }[];
  headings: string[];
  diagnostics: Diagnostic[];
};

/** The manifest TSV of these documents (`bundle` defaults to "bundle"). */
export function manifest(documents: (Document & { bundle?: string })[], tenant?: string): string;
