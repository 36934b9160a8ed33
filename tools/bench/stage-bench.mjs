#!/usr/bin/env node
// Runs tools/bench/stage-bench.ts, bundled from source by esbuild (no build first), and prints its
// table. Usage: node tools/bench/stage-bench.mjs [--nodes N] [--slice N] [--changes N] [--out FILE]
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadSource } from './load-source.mjs';

/**
 * @typedef {{ feedMatchesEngine: boolean }} StageBenchReport
 * @typedef {{
 *   runStageBench: (options: { nodes: number, slice: number, changes: number }) => Promise<StageBenchReport>,
 *   formatStageReport: (report: StageBenchReport) => string,
 * }} StageBench
 */

async function main() {
  /** @type {{ values: { nodes?: string, slice?: string, changes?: string, out?: string } }} */
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        nodes: { type: 'string', default: '6000' },
        slice: { type: 'string', default: '64' },
        changes: { type: 'string', default: '300' },
        out: { type: 'string' },
      },
    });
  } catch (error) {
    process.stderr.write(`stage-bench: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
  const { values } = parsed;
  const nodes = Number(values.nodes);
  const slice = Number(values.slice);
  const changes = Number(values.changes);
  if (
    !Number.isSafeInteger(nodes) ||
    nodes < 2 ||
    !Number.isSafeInteger(slice) ||
    slice < 1 ||
    !Number.isSafeInteger(changes) ||
    changes < 0
  ) {
    process.stderr.write(
      'stage-bench: --nodes must be a whole number of 2 or more, --slice of 1 or more, --changes of 0 or more\n',
    );
    process.exit(2);
  }
  const { runStageBench, formatStageReport } = /** @type {StageBench} */ (
    await loadSource('tools/bench/stage-bench.ts')
  );
  const report = await runStageBench({ nodes, slice, changes });
  process.stdout.write(`${formatStageReport(report)}\n`);
  if (values.out) writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
  process.exit(report.feedMatchesEngine ? 0 : 1);
}

main().catch((error) => {
  process.stderr.write(
    `stage-bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
