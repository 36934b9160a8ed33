#!/usr/bin/env node
// Runs tools/bench/config-ab.ts, bundled from source (this tree's services must be built), and
// prints its table. Usage: node tools/bench/config-ab.mjs --against <tree> [--node-option-against
// <flag>]... [--nodes N] [--rounds N] [--block N] [--rate N] [--out FILE]
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { benchCommand } from './load-source.mjs';

/**
 * @typedef {{ against: string, nodeOptionsAgainst: string[], nodes: number, rounds: number, block: number, rate: number }} ConfigAbOptions
 * @typedef {{
 *   runConfigAb: (options: ConfigAbOptions) => Promise<unknown>,
 *   formatConfigAb: (report: unknown) => string,
 * }} ConfigAb
 * @typedef {{ against?: string, 'node-option-against'?: string[], nodes: string, rounds: string, block: string, rate: string, out?: string }} ConfigValues
 */

/** @param {ConfigValues} values */
const numbersOf = (values) => ({
  nodes: Number(values.nodes),
  rounds: Number(values.rounds),
  block: Number(values.block),
  rate: Number(values.rate),
});

benchCommand({
  name: 'config-ab',
  entry: 'tools/bench/config-ab.ts',
  options: {
    against: { type: 'string' },
    // A flag for the other build's node only: one build against itself with and without it.
    'node-option-against': { type: 'string', multiple: true },
    nodes: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '8' },
    block: { type: 'string', default: '100' },
    rate: { type: 'string', default: '20' },
    out: { type: 'string' },
  },
  check: (/** @type {ConfigValues} */ values) => {
    const bad = Object.entries(numbersOf(values)).find(
      ([, value]) => !Number.isSafeInteger(value) || value < 1,
    );
    if (bad) return `--${bad[0]} must be a whole number of 1 or more`;
    if (!values.against) return '--against <tree> is required (a checkout after npm run build)';
    const notAFlag = values['node-option-against']?.find((flag) => !flag.startsWith('--'));
    if (notAFlag !== undefined)
      return `--node-option-against must be a node option such as --initial-old-space-size=512, not ${notAFlag}`;
    const other = join(values.against, 'dist/config-service/main.js');
    return existsSync(other) ? undefined : `--against: ${other} is missing (run npm run build there)`;
  },
  run: async (/** @type {ConfigAb} */ bench, /** @type {ConfigValues} */ values) => {
    const report = await bench.runConfigAb({
      against: values.against ?? '',
      nodeOptionsAgainst: values['node-option-against'] ?? [],
      ...numbersOf(values),
    });
    return { report, text: bench.formatConfigAb(report), ok: true };
  },
});
