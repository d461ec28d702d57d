'use strict';
// @okfit/wasm in Node (CommonJS): the module is ready on require; init()
// exists so browser code runs unchanged.
const wasm = require('./node/okfit_wasm.js');

module.exports = {
  default: async function init() {},
  initSync() {},
  validate: wasm.validate,
  parseConcept: wasm.parseConcept,
  manifest: wasm.manifest,
};
