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
  readonly nodes?: number;
  readonly seed: number;
  readonly scenario: readonly string[];
  readonly out?: string;
  readonly naive: boolean;
  readonly threads: number;
  readonly pipeline: boolean;
  readonly rate: number;
  readonly seconds: number;
  readonly warmUp: number;
  readonly generators: number;
  readonly compareGenerator?: string;
  readonly profile?: string;
  readonly nodeOption: readonly string[];
}

const ENGINE_NODES = 100_000;
const PIPELINE_NODES = 10_000;
/** As long as the measured load: at 20 change sets a second, V8 is still compiling the services' code for it after 30 s. */
const PIPELINE_WARM_UP_SECONDS = 30;

function positiveInteger(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value)))
    throw new InvalidArgumentError('must be a positive integer');
  return Number(value);
}

/** A warm-up longer than this warms nothing more and only plans change sets by the million. */
const MAX_WARM_UP_SECONDS = 3_600;

function warmUpSeconds(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > MAX_WARM_UP_SECONDS)
    throw new InvalidArgumentError(`must be a whole number of seconds from 0 to ${MAX_WARM_UP_SECONDS}`);
  return Number(value);
}

/** A `node` option for the services: one flag, `--name` or `--name=value`, never a script or a second word. */
function nodeOption(value: string, previous: readonly string[]): string[] {
  if (!/^--[a-z][a-z0-9-_]*(=\S+)?$/i.test(value))
    throw new InvalidArgumentError(
      'must be one node option such as --perf-basic-prof or --max-semi-space-size=64',
    );
  return [...previous, value];
}

export const defineBench: CommandDefinition = (program, { streams, exitWith }) => {
  program
    .command('bench')
    .description(
      'benchmark full and incremental generation on a deterministic synthetic fleet (architecture.md, performance targets); ' +
        'with --pipeline, the real services as processes on Kafka, Redis and Postgres',
    )
    .addOption(
      new Option(
        '--nodes <n>',
        `nodes of the synthetic fleet (default: ${ENGINE_NODES}, ${PIPELINE_NODES} with --pipeline)`,
      ).argParser(positiveInteger),
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
    .option(
      '--pipeline',
      'benchmark the pipeline instead: config-service, generator(s), distribution-service and relays as processes ' +
        '(run `npm run build` first; Kafka, Redis and Postgres from KAFKA_BROKERS, REDIS_URL, DATABASE_URL, else started as for the tests)',
      false,
    )
    .addOption(
      new Option('--rate <n>', 'with --pipeline: change sets per second of the steady load')
        .argParser(positiveInteger)
        .default(20),
    )
    .addOption(
      new Option('--seconds <n>', 'with --pipeline: how long the steady load lasts')
        .argParser(positiveInteger)
        .default(30),
    )
    .addOption(
      new Option(
        '--warm-up <seconds>',
        'with --pipeline: seconds of the same load before the measured one, reported apart (0: none)',
      )
        .argParser(warmUpSeconds)
        .default(PIPELINE_WARM_UP_SECONDS),
    )
    .addOption(
      new Option('--generators <n>', 'with --pipeline: generator instances (one consumer group)')
        .argParser(positiveInteger)
        .default(1),
    )
    .addOption(
      new Option(
        '--compare-generator <tree>',
        "with --pipeline and --generators 2 or more: the last generator runs another build's (<tree>/dist/generator-service/main.js, " +
          'e.g. a checkout of main after `npm run build`), to compare two builds under the same load in one run',
      ),
    )
    .addOption(
      new Option(
        '--profile <dir>',
        'with --pipeline: each service writes a V8 CPU profile (--cpu-prof, sampled every 10 ms) into <dir>/<service> as it exits',
      ),
    )
    .addOption(
      new Option(
        '--node-option <flag>',
        "with --pipeline: an option for every service's node, e.g. --node-option=--perf-basic-prof (repeatable; reported with the machine)",
      )
        .argParser(nodeOption)
        .default([]),
    )
    .addOption(
      new Option(
        '-o, --out <file>',
        'where to write the JSON report (default: bench-results.json, bench-pipeline.json with --pipeline)',
      ),
    )
    .action(async (options: BenchCommandOptions) => {
      if (options.pipeline) {
        // Loaded only here: it brings the test harness's infrastructure providers along.
        const { runPipelineCommand } = await import('../bench/pipeline/pipeline-command');
        await runPipelineCommand(
          {
            nodes: options.nodes ?? PIPELINE_NODES,
            seed: options.seed,
            rate: options.rate,
            seconds: options.seconds,
            warmUpSeconds: options.warmUp,
            generators: options.generators,
            ...(options.compareGenerator === undefined ? {} : { compareGenerator: options.compareGenerator }),
            out: options.out ?? 'bench-pipeline.json',
            ...(options.profile === undefined ? {} : { profile: options.profile }),
            ...(options.nodeOption.length === 0 ? {} : { nodeOptions: options.nodeOption }),
          },
          streams,
        );
        exitWith(EXIT_OK);
        return;
      }
      const out = options.out ?? 'bench-results.json';
      const unknown = options.scenario.filter((name) => !scenarioNames().includes(name));
      if (unknown.length > 0)
        throw new InputError(`unknown scenario ${unknown.join(', ')} (one of ${scenarioNames().join(', ')})`);
      const machine = { cpus: availableParallelism(), loadAverage: loadavg(), node: process.version };
      const report = await runBench(
        {
          nodes: options.nodes ?? ENGINE_NODES,
          seed: options.seed,
          scenarios: options.scenario,
          skipNaive: !options.naive,
          threads: options.threads,
          onProgress: (message) => writeLine(streams.stderr, `bench: ${message}`),
        },
        machine,
      );
      try {
        await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
      } catch (error) {
        throw new InputError(`cannot write ${out}: ${describeFsError(error)}`);
      }
      writeLine(streams.stdout, formatBenchTable(report));
      writeLine(streams.stderr, `bench: report written to ${out}`);
      exitWith(EXIT_OK);
    });
};
