import { performance } from 'node:perf_hooks';
import { Option } from 'commander';
import { GenerationEngine } from '@policygen/engine';
import type { OrderingMode } from '@policygen/engine';
import { EXIT_FAILED, EXIT_OK, FleetValidationError } from '../errors';
import { generateInto, reportFailures } from '../generation';
import type { GenerationSummary } from '../generation';
import { readChanges } from '../io/read-changes';
import { checkNodeIds, readFleet } from '../io/read-fleet';
import { formatSeconds, writeLine } from '../io/streams';
import { prepareOutputDirectory, removeNodeBundle } from '../io/write-bundles';
import { collect, fleetOption, orderingOption, parseRevision } from '../options';
import type { CommandDefinition } from './context';

interface GenerateCommandOptions {
  readonly fleet: string;
  readonly out: string;
  readonly node: readonly string[];
  readonly ordering?: OrderingMode;
  readonly revision: number;
  readonly generatedAt?: number;
  readonly changes?: string;
  readonly json?: boolean;
}

/** What one change set of `--changes` did (`--json`). */
interface ChangeReport {
  readonly line: number;
  readonly revision: number;
  /** Nodes the dependency index said the change set can affect. */
  readonly affected: number;
  /** Affected nodes computed (the others had unchanged inputs). */
  readonly recomputed: number;
  /** Nodes whose bundle (hash, status or errors) changed. */
  readonly changed: number;
  readonly removed: number;
  readonly engineMs: number;
}

export const defineGenerate: CommandDefinition = (program, { streams, exitWith }) => {
  program
    .command('generate')
    .description(
      'write the bundle of every node (or of the --node ones) under DIR/<node id>/; with --changes, apply each change set incrementally first and write the final bundles',
    )
    .addOption(fleetOption())
    .addOption(new Option('-o, --out <dir>', 'the output directory').makeOptionMandatory())
    .addOption(
      new Option('-n, --node <id>', 'generate this node only (repeatable)').argParser(collect).default([]),
    )
    .addOption(orderingOption())
    .addOption(
      new Option('--revision <n>', 'the revision of the fleet file (each change set adds one)')
        .argParser(parseRevision)
        .default(0),
    )
    .addOption(
      new Option(
        '--generated-at <epoch-ms>',
        'the time written to rudder-promises-generated (default: now), for reproducible output',
      ).argParser(parseRevision),
    )
    .option(
      '-c, --changes <file>',
      'change sets, one JSON object per line (fleet-format.md), applied in order',
    )
    .option('--json', 'print a machine-readable summary on stdout')
    .action(async (options: GenerateCommandOptions) => {
      const started = performance.now();
      const fleet = await readFleet(options.fleet);
      const changes = options.changes === undefined ? [] : await readChanges(options.changes);
      const engine = GenerationEngine.fromFleet(fleet, {
        revision: options.revision,
        ...(options.ordering ? { ordering: options.ordering } : {}),
      });
      const changeReports: ChangeReport[] = [];
      if (changes.length > 0) {
        engine.regenerate();
        for (const { line, changeSet } of changes) {
          const before = performance.now();
          const outcome = engine.apply(changeSet);
          if (!outcome.ok)
            throw new FleetValidationError(`${options.changes}:${line}`, outcome.issues, 'change set');
          const run = engine.regenerate();
          changeReports.push({
            line,
            revision: run.revision,
            affected: outcome.affected.length,
            recomputed: run.recomputed,
            changed: run.changed.length,
            removed: run.removed.length,
            engineMs: round(performance.now() - before),
          });
        }
      }
      const nodeIds =
        options.node.length > 0 ? checkNodeIds(engine.compiled, options.node) : engine.compiled.nodeIds;
      await prepareOutputDirectory(options.out);
      const removed = new Set(changes.length > 0 ? fleet.nodes.map((node) => node.id) : []);
      for (const nodeId of engine.compiled.nodeIds) removed.delete(nodeId);
      for (const nodeId of removed) await removeNodeBundle(options.out, nodeId);
      const summary = await generateInto(
        engine,
        nodeIds,
        options.out,
        { generatedAt: options.generatedAt ?? Date.now() },
        streams,
      );
      const durationMs = Math.round(performance.now() - started);
      reportFailures(summary, streams);
      if (changeReports.length > 0) writeLine(streams.stderr, changesLine(changeReports));
      writeLine(streams.stderr, summaryLine(summary, options.out, durationMs, engine.revision));
      if (options.json)
        writeLine(
          streams.stdout,
          JSON.stringify(
            {
              ...jsonSummary(summary, options.out, durationMs),
              revision: engine.revision,
              ...(options.changes === undefined ? {} : { changes: changeReports }),
            },
            null,
            2,
          ),
        );
      exitWith(summary.failed > 0 ? EXIT_FAILED : EXIT_OK);
    });
};

function round(milliseconds: number): number {
  return Math.round(milliseconds * 1000) / 1000;
}

/** `applied 3 change sets: 12 nodes affected, 10 changed, 0.41 ms engine time` */
function changesLine(reports: readonly ChangeReport[]): string {
  const sum = (pick: (report: ChangeReport) => number): number =>
    reports.reduce((total, report) => total + pick(report), 0);
  return (
    `applied ${reports.length} change ${reports.length === 1 ? 'set' : 'sets'}: ` +
    `${sum((r) => r.affected)} nodes affected, ${sum((r) => r.changed)} changed, ` +
    `${round(sum((r) => r.engineMs))} ms engine time`
  );
}

/** `generated 300 nodes (2 failed, 1 ignored) into out/ in 1.42 s` */
export function summaryLine(
  summary: GenerationSummary,
  outDir: string,
  durationMs: number,
  revision?: number,
): string {
  const into = outDir.endsWith('/') ? outDir : `${outDir}/`;
  return (
    `generated ${summary.nodes} ${summary.nodes === 1 ? 'node' : 'nodes'} ` +
    `(${summary.failed} failed, ${summary.ignored} ignored) into ${into}` +
    `${revision ? ` at revision ${revision}` : ''} in ${formatSeconds(durationMs)}`
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
