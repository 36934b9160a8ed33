// Builds @policygen/sdk to libs/sdk/dist (CommonJS and type declarations, with the AsyncAPI document
// of its events) and packs it: `npm run sdk:pack -- [--out DIR]`. Prints the tarball's path last.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const sdk = join(root, 'libs', 'sdk');
const outFlag = process.argv.indexOf('--out');
const out = resolve(outFlag >= 0 ? process.argv[outFlag + 1] : join(root, 'dist', 'sdk'));

rmSync(join(sdk, 'dist'), { recursive: true, force: true });
const tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(sdk, 'tsconfig.build.json')], { stdio: 'inherit' });
copyFileSync(join(root, 'libs', 'events', 'asyncapi.json'), join(sdk, 'dist', 'asyncapi.json'));
mkdirSync(out, { recursive: true });
const packed = JSON.parse(
  execFileSync('npm', ['pack', '--json', '--pack-destination', out], { cwd: sdk, encoding: 'utf8' }),
);
process.stdout.write(`${join(out, packed[0].filename)}\n`);
