import { writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg } from 'node:os';
import { InvalidArgumentError, Option } from 'commander';
import { formatBenchTable } from '../bench/report';
import { runBench, scenarioNames } from '../bench/run-bench';
import { EXIT_OK, InputError, describeFsError } from '../errors';
import { writeLine } from '../io/streams';
import { collect } from '../options';
import type { CommandDefinition } from './context';

interface BenchCommandOptions {
  readonly nodes: number;
  readonly seed: number;
  readonly scenario: readonly string[];
  readonly out: string;
  readonly naive: boolean;
  readonly threads: number;
}

function positiveInteger(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value)))
    throw new InvalidArgumentError('must be a positive integer');
  return Number(value);
}

export const defineBench: CommandDefinition = (program, { streams, exitWith }) => {
  program
    .command('bench')
    .description(
      'benchmark full and incremental generation on a deterministic synthetic fleet (architecture.md, performance targets)',
    )
    .addOption(
      new Option('--nodes <n>', 'nodes of the synthetic fleet').argParser(positiveInteger).default(100_000),
    )
    .addOption(new Option('--seed <n>', 'seed of the synthetic fleet').argParser(positiveInteger).default(1))
    .addOption(
      new Option(
        '-s, --scenario <name>',
        `run this scenario only (repeatable): ${scenarioNames().join(', ')}`,
      )
        .argParser(collect)
        .default([]),
    )
    .addOption(
      new Option('--threads <n>', 'worker threads for the parallel full generation (1: none)')
        .argParser(positiveInteger)
        .default(availableParallelism()),
    )
    .option('--no-naive', 'skip the naive figure (a full regeneration after each change)')
    .addOption(new Option('-o, --out <file>', 'where to write the JSON report').default('bench-results.json'))
    .action(async (options: BenchCommandOptions) => {
      const unknown = options.scenario.filter((name) => !scenarioNames().includes(name));
      if (unknown.length > 0)
        throw new InputError(`unknown scenario ${unknown.join(', ')} (one of ${scenarioNames().join(', ')})`);
      const machine = { cpus: availableParallelism(), loadAverage: loadavg(), node: process.version };
      const report = await runBench(
        {
          nodes: options.nodes,
          seed: options.seed,
          scenarios: options.scenario,
          skipNaive: !options.naive,
          threads: options.threads,
          onProgress: (message) => writeLine(streams.stderr, `bench: ${message}`),
        },
        machine,
      );
      try {
        await writeFile(options.out, `${JSON.stringify(report, null, 2)}\n`);
      } catch (error) {
        throw new InputError(`cannot write ${options.out}: ${describeFsError(error)}`);
      }
      writeLine(streams.stdout, formatBenchTable(report));
      writeLine(streams.stderr, `bench: report written to ${options.out}`);
      exitWith(EXIT_OK);
    });
};
