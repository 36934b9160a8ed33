#!/usr/bin/env node
'use strict';
// The `policygen` command of the workspace (`npx policygen`): runs the bundle `npm run build` makes.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const bundle = join(__dirname, '..', '..', '..', 'dist', 'cli', 'policygen.js');
if (!existsSync(bundle)) {
  process.stderr.write('policygen is not built: run npm run build\n');
  process.exit(1);
}
require(bundle);
