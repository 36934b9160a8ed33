import { performance } from 'node:perf_hooks';
import { Option } from 'commander';
import type { OrderingMode } from '@policygen/engine';
import { EXIT_FAILED, EXIT_OK } from '../errors';
import { generateInto, reportFailures } from '../generation';
import type { GenerationSummary } from '../generation';
import { checkNodeIds, readCompiledFleet } from '../io/read-fleet';
import { formatSeconds, writeLine } from '../io/streams';
import { prepareOutputDirectory } from '../io/write-bundles';
import { collect, fleetOption, generateOptions, orderingOption, parseRevision } from '../options';
import type { CommandDefinition } from './context';

interface GenerateCommandOptions {
  readonly fleet: string;
  readonly out: string;
  readonly node: readonly string[];
  readonly ordering?: OrderingMode;
  readonly revision: number;
  readonly json?: boolean;
}

export const defineGenerate: CommandDefinition = (program, { streams, exitWith }) => {
  program
    .command('generate')
    .description('write the bundle of every node (or of the --node ones) under DIR/<node id>/')
    .addOption(fleetOption())
    .addOption(new Option('-o, --out <dir>', 'the output directory').makeOptionMandatory())
    .addOption(
      new Option('-n, --node <id>', 'generate this node only (repeatable)').argParser(collect).default([]),
    )
    .addOption(orderingOption())
    .addOption(
      new Option('--revision <n>', 'the configuration revision written to the manifests')
        .argParser(parseRevision)
        .default(0),
    )
    .option('--json', 'print a machine-readable summary on stdout')
    .action(async (options: GenerateCommandOptions) => {
      const started = performance.now();
      const compiled = await readCompiledFleet(options.fleet);
      const nodeIds = options.node.length > 0 ? checkNodeIds(compiled, options.node) : compiled.nodeIds;
      await prepareOutputDirectory(options.out);
      const summary = await generateInto(
        compiled,
        nodeIds,
        options.out,
        generateOptions({ ordering: options.ordering, revision: options.revision, generatedAt: Date.now() }),
        streams,
      );
      const durationMs = Math.round(performance.now() - started);
      reportFailures(summary, streams);
      writeLine(streams.stderr, summaryLine(summary, options.out, durationMs));
      if (options.json)
        writeLine(streams.stdout, JSON.stringify(jsonSummary(summary, options.out, durationMs), null, 2));
      exitWith(summary.failed > 0 ? EXIT_FAILED : EXIT_OK);
    });
};

/** `generated 300 nodes (2 failed, 1 ignored) into out/ in 1.42 s` */
export function summaryLine(summary: GenerationSummary, outDir: string, durationMs: number): string {
  const into = outDir.endsWith('/') ? outDir : `${outDir}/`;
  return (
    `generated ${summary.nodes} ${summary.nodes === 1 ? 'node' : 'nodes'} ` +
    `(${summary.failed} failed, ${summary.ignored} ignored) into ${into} in ${formatSeconds(durationMs)}`
  );
}

function jsonSummary(summary: GenerationSummary, outDir: string, durationMs: number) {
  return {
    nodes: summary.nodes,
    ok: summary.ok,
    failed: summary.failed,
    ignored: summary.ignored,
    out: outDir,
    durationMs,
    failures: summary.failures,
    hashes: summary.hashes,
  };
}
