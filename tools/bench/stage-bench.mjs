#!/usr/bin/env node
// Runs tools/bench/stage-bench.ts, bundled from source by esbuild (no build first), and prints its
// table. Usage: node tools/bench/stage-bench.mjs [--nodes N] [--slice N] [--changes N] [--out FILE]
import { benchCommand } from './load-source.mjs';

/**
 * @typedef {{ feedMatchesEngine: boolean }} StageBenchReport
 * @typedef {{
 *   runStageBench: (options: { nodes: number, slice: number, changes: number }) => Promise<StageBenchReport>,
 *   formatStageReport: (report: StageBenchReport) => string,
 * }} StageBench
 * @typedef {{ nodes: string, slice: string, changes: string, out?: string }} StageValues
 */

/** @param {StageValues} values */
const numbersOf = (values) => ({
  nodes: Number(values.nodes),
  slice: Number(values.slice),
  changes: Number(values.changes),
});

benchCommand({
  name: 'stage-bench',
  entry: 'tools/bench/stage-bench.ts',
  options: {
    nodes: { type: 'string', default: '6000' },
    slice: { type: 'string', default: '64' },
    changes: { type: 'string', default: '300' },
    out: { type: 'string' },
  },
  check: (/** @type {StageValues} */ values) => {
    const { nodes, slice, changes } = numbersOf(values);
    const whole = Number.isSafeInteger;
    return whole(nodes) && nodes >= 2 && whole(slice) && slice >= 1 && whole(changes) && changes >= 0
      ? undefined
      : '--nodes must be a whole number of 2 or more, --slice of 1 or more, --changes of 0 or more';
  },
  run: async (/** @type {StageBench} */ bench, /** @type {StageValues} */ values) => {
    const report = await bench.runStageBench(numbersOf(values));
    return { report, text: bench.formatStageReport(report), ok: report.feedMatchesEngine };
  },
});
