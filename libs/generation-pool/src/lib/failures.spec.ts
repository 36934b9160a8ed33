import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import type { Fleet } from '@policygen/engine';
import { BUILT_WORKER, demoFleet } from '../testing/fixtures';
import { GenerationPool } from './pool';
import { PROTOCOL_VERSION } from './protocol';

/** Stand-in worker scripts: they start as the real one does, then misbehave on the first compute. */
const READY = `const { parentPort } = require('node:worker_threads');
parentPort.postMessage({ kind: 'ready', protocol: ${PROTOCOL_VERSION}, revision: 0 });`;
const SCRIPTS = {
  exits: `${READY}
parentPort.on('message', (request) => {
  if (request.kind === 'compute') process.exit(7);
  parentPort.postMessage({ kind: 'done', id: request.id });
});`,
  throwsLater: `${READY}
parentPort.on('message', () => setImmediate(() => { throw new Error('worker blew up'); }));`,
  throwsAtStart: `throw new Error('cannot load');`,
  outdated: `const { parentPort } = require('node:worker_threads');
parentPort.postMessage({ kind: 'ready', protocol: ${PROTOCOL_VERSION - 1}, revision: 0 });
parentPort.on('message', () => undefined);`,
};

describe('GenerationPool failures', () => {
  const fleet = demoFleet();
  let directory: string;
  const script = (name: keyof typeof SCRIPTS): string => join(directory, `${name}.js`);

  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), 'generation-pool-'));
    for (const [name, source] of Object.entries(SCRIPTS))
      writeFileSync(join(directory, `${name}.js`), source);
  });

  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  it('says to run the build when the worker script is missing', async () => {
    await expect(GenerationPool.start({ fleet, workerFile: join(directory, 'missing.js') })).rejects.toThrow(
      /does not exist: run `npm run build`/,
    );
  });

  it('rejects a compute whose worker exits, then every later call', async () => {
    const pool = await GenerationPool.start({ fleet, threads: 2, workerFile: script('exits') });
    try {
      await expect(pool.compute(['a', 'b'])).rejects.toThrow(/generation worker \d exited with code 7/);
      await expect(pool.compute(['a'])).rejects.toThrow(/exited with code 7/);
      await expect(pool.applyValid({} as never)).rejects.toThrow(/exited with code 7/);
    } finally {
      await pool.close();
    }
  });

  it('rejects a compute whose worker throws outside a request', async () => {
    const pool = await GenerationPool.start({ fleet, threads: 2, workerFile: script('throwsLater') });
    try {
      await expect(pool.compute(['a'])).rejects.toThrow(/generation worker \d failed: worker blew up/);
    } finally {
      await pool.close();
    }
  });

  it('rejects the start of workers that throw while loading', async () => {
    await expect(
      GenerationPool.start({ fleet, threads: 2, workerFile: script('throwsAtStart') }),
    ).rejects.toThrow(/failed: cannot load/);
  });

  it('refuses a worker script built from older sources', async () => {
    await expect(GenerationPool.start({ fleet, threads: 1, workerFile: script('outdated') })).rejects.toThrow(
      /out of date, run `npm run build`/,
    );
  });

  it('rejects the start when a worker cannot build its engine', async () => {
    const broken = { ...fleet, groups: null } as unknown as Fleet;
    await expect(
      GenerationPool.start({ fleet: broken, threads: 2, workerFile: BUILT_WORKER }),
    ).rejects.toThrow(/generation worker \d failed/);
  });

  it('rejects a compute of an unknown node and stays usable', async () => {
    const pool = await GenerationPool.start({ fleet, threads: 2, workerFile: BUILT_WORKER });
    try {
      await expect(pool.compute(['web-par-001', 'no-such-node'])).rejects.toThrow(
        'unknown node no-such-node',
      );
      const output = await pool.compute(['web-par-001']);
      expect(output.results.map((result) => result.status)).toEqual(['ok']);
    } finally {
      await pool.close();
    }
  });

  it('rejects calls made after close', async () => {
    const pool = await GenerationPool.start({ fleet, threads: 1, workerFile: BUILT_WORKER });
    await pool.close();
    await expect(pool.compute(['web-par-001'])).rejects.toThrow('the generation pool is closed');
  });

  it('leaves no thread behind once closed: the process exits by itself', () => {
    const program = join(directory, 'program.js');
    buildSync({
      stdin: {
        contents: `
          import { validateFleet } from '@policygen/engine';
          import { buildDemoFleet } from '@policygen/fleets';
          import { GenerationPool } from '@policygen/generation-pool';
          async function main(): Promise<void> {
            const validation = validateFleet(buildDemoFleet());
            if (!validation.ok) throw new Error('invalid demo fleet');
            const pool = await GenerationPool.start({ fleet: validation.fleet, threads: 2, workerFile: process.argv[2] });
            const output = await pool.compute(validation.fleet.nodes.map((node) => node.id));
            await pool.close();
            process.stdout.write(\`computed \${output.results.length}\\n\`);
          }
          main().catch((error) => { console.error(error); process.exitCode = 1; });
        `,
        loader: 'ts',
        resolveDir: __dirname,
      },
      outfile: program,
      bundle: true,
      platform: 'node',
      format: 'cjs',
      tsconfig: join(__dirname, '..', '..', '..', '..', 'tsconfig.base.json'),
      logLevel: 'silent',
    });
    // The timeout only bounds a hang (a thread left running); nothing here measures time.
    const run = spawnSync(process.execPath, [program, BUILT_WORKER], { encoding: 'utf8', timeout: 50_000 });
    expect({ status: run.status, signal: run.signal, stderr: run.stderr }).toEqual({
      status: 0,
      signal: null,
      stderr: '',
    });
    expect(run.stdout).toBe(`computed ${fleet.nodes.length}\n`);
  });
});
