// @okfit/wasm in Node (ESM): the module is ready on import; init() exists
// so browser code runs unchanged.
import { createRequire } from 'node:module';

const wasm = createRequire(import.meta.url)('./node/okfit_wasm.js');

export default async function init() {}
export function initSync() {}
export const { validate, parseConcept, manifest } = wasm;
