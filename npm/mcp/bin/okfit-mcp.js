#!/usr/bin/env node
'use strict';
// okfit-mcp from npm: the native okfit-mcp command line, run in this
// process (same arguments, environment, stdout and exit codes).
const { runMcpCli } = require('../index.js');

runMcpCli(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`error: ${e && e.message ? e.message : e}\n`);
    process.exit(1);
  },
);
