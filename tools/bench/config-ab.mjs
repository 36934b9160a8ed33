#!/usr/bin/env node
// Runs tools/bench/config-ab.ts, bundled from source (this tree's services must be built), and
// prints its table. Usage: node tools/bench/config-ab.mjs --against <tree> [--nodes N] [--rounds N]
// [--block N] [--rate N] [--out FILE]
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadSource } from './load-source.mjs';

/**
 * @typedef {{ against: string, nodes: number, rounds: number, block: number, rate: number }} ConfigAbOptions
 * @typedef {{
 *   runConfigAb: (options: ConfigAbOptions) => Promise<unknown>,
 *   formatConfigAb: (report: unknown) => string,
 * }} ConfigAb
 */

async function main() {
  /** @type {{ values: { against?: string, nodes?: string, rounds?: string, block?: string, rate?: string, out?: string } }} */
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        against: { type: 'string' },
        nodes: { type: 'string', default: '10000' },
        rounds: { type: 'string', default: '8' },
        block: { type: 'string', default: '100' },
        rate: { type: 'string', default: '20' },
        out: { type: 'string' },
      },
    });
  } catch (error) {
    process.stderr.write(`config-ab: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
  const { values } = parsed;
  const numbers = {
    nodes: Number(values.nodes),
    rounds: Number(values.rounds),
    block: Number(values.block),
    rate: Number(values.rate),
  };
  const bad = Object.entries(numbers).find(([, value]) => !Number.isSafeInteger(value) || value < 1);
  if (!values.against || bad) {
    process.stderr.write(
      `config-ab: ${bad ? `--${bad[0]} must be a whole number of 1 or more` : '--against <tree> is required (a checkout after npm run build)'}\n`,
    );
    process.exit(2);
  }
  const { runConfigAb, formatConfigAb } = /** @type {ConfigAb} */ (
    await loadSource('tools/bench/config-ab.ts')
  );
  const report = await runConfigAb({ against: values.against, ...numbers });
  process.stdout.write(`${formatConfigAb(report)}\n`);
  if (values.out) writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
  process.exit(0);
}

main().catch((error) => {
  process.stderr.write(
    `config-ab: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
