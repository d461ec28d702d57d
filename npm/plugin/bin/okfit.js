#!/usr/bin/env node
'use strict';
// okfit from @okfit/plugin: the native okfit command line, run in this
// process by @okfit/mcp's addon (same arguments, environment, stdout and
// exit codes), naming this package as the launcher so `okfit --version`
// says `via @okfit/plugin <version>`.
const { runCli } = require('@okfit/mcp');
const { name, version } = require('../package.json');

runCli(process.argv.slice(2), { name, version }).then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`error: ${e && e.message ? e.message : e}\n`);
    process.exit(1);
  },
);
