#!/usr/bin/env node
'use strict';
// okfit-mcp from @okfit/plugin: @okfit/mcp's server command line, linked
// here too so every package manager (pnpm links only direct dependencies'
// bins) puts node_modules/.bin/okfit-mcp where the plugin's loader looks.
require('@okfit/mcp/bin/okfit-mcp.js');
