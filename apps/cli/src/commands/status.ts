import { EXIT_FAILED, EXIT_OK } from '../errors';
import { PipelineApi } from '../io/pipeline-api';
import type { FailurePage, PipelineStatus } from '../io/pipeline-api';
import { writeLine } from '../io/streams';
import type { CommandDefinition } from './context';
import type { PipelineCommandOptions } from './pipeline-options';
import { pipelineOptions } from './pipeline-options';

interface StatusOptions extends PipelineCommandOptions {
  readonly settle: number;
}

/** What is still on its way: revisions not generated or distributed, bundles relays have not confirmed. */
function backlogOf(status: PipelineStatus): number {
  // A revision that regenerated no node has no generation event: the committed one is not waited for.
  const { generated, distributed } = status.revisions;
  // A relay that never confirmed anything is not running: it is listed, not waited for.
  const relays = status.relays
    .filter((relay) => relay.confirmedAt !== null)
    .reduce((sum, relay) => sum + relay.behind, 0);
  return Math.max(0, generated - distributed) + relays;
}

/** Nothing moved between two looks while something waits. */
function stuck(first: PipelineStatus, second: PipelineStatus): boolean {
  const moved =
    second.revisions.generated > first.revisions.generated ||
    second.revisions.distributed > first.revisions.distributed ||
    backlogOf(second) < backlogOf(first);
  return backlogOf(second) > 0 && !moved;
}

function render(status: PipelineStatus, failures: FailurePage, isStuck: boolean): string[] {
  const { committed, generated, distributed } = status.revisions;
  const lines = [
    `pipeline    ${status.ready ? 'ready' : 'NOT READY'}${isStuck ? ', STUCK (nothing moved while work waits)' : ''}`,
    ...status.reasons.map((reason) => `  ${reason}`),
    `revisions   committed ${committed}, generated ${generated}, distributed ${distributed}`,
    `throughput  ${status.throughput.changesPerSecond} changes/s, ${status.throughput.nodesGeneratedPerSecond} nodes generated/s, ${status.throughput.bundlesDeliveredPerSecond} bundles delivered/s`,
  ];
  const codes = Object.entries(status.failuresByCode)
    .map(([code, count]) => `${code} ×${count}`)
    .join(', ');
  lines.push(
    `failing     ${status.failingNodes === 0 ? 'no node' : `${status.failingNodes} node(s): ${codes}`}`,
  );
  for (const failure of failures.items) {
    const where = [
      failure.directiveIds.length > 0 ? `directive ${failure.directiveIds.join(',')}` : '',
      failure.ruleIds.length > 0 ? `rule ${failure.ruleIds.join(',')}` : '',
    ]
      .filter(Boolean)
      .join(' ');
    lines.push(
      `  ${failure.nodeId}  ${failure.code}  ${where}  since revision ${failure.sinceRevision}: ${failure.message.split('\n')[0] ?? ''}`,
    );
  }
  if (failures.total > failures.items.length)
    lines.push(`  ... ${failures.total - failures.items.length} more`);
  lines.push('relays');
  for (const relay of status.relays) {
    const state =
      relay.confirmedAt === null
        ? 'no bundle confirmed yet (not running?)'
        : relay.behind > 0
          ? `BEHIND by ${relay.behind} node(s)`
          : 'in sync';
    lines.push(
      `  ${relay.relayId}${relay.parentId ? ` (under ${relay.parentId})` : ''}  revision ${relay.revision}  ${relay.nodes} nodes  ${state}`,
    );
  }
  lines.push('consumers');
  for (const consumer of status.consumers)
    lines.push(`  ${consumer.group}  ${consumer.topic}  lag ${consumer.lag}`);
  lines.push(`generators  ${status.generators.length} instance(s)`);
  for (const member of status.generators)
    lines.push(`  ${member.clientId} ${member.memberId}  partitions [${member.partitions.join(',')}]`);
  return lines;
}

export const defineStatus: CommandDefinition = (program, { streams, exitWith }) => {
  const command = program
    .command('status')
    .description(
      'where a running pipeline stands: revision per stage, failing nodes, relays behind, consumer lag; exit 1 when something fails or is stuck',
    );
  for (const option of pipelineOptions()) command.addOption(option);
  command
    .option(
      '--settle <ms>',
      'when work waits, look again after this long: stuck if nothing moved',
      (value) => {
        const parsed = Number(value);
        if (!Number.isInteger(parsed) || parsed < 0)
          throw new Error(`--settle: a number of milliseconds, not ${value}`);
        return parsed;
      },
      3_000,
    )
    .action(async (options: StatusOptions) => {
      const api = new PipelineApi(options.url, options.token);
      let status = await api.status();
      let isStuck = false;
      if (backlogOf(status) > 0 && options.settle > 0) {
        await new Promise((resolve) => setTimeout(resolve, options.settle));
        const later = await api.status();
        isStuck = stuck(status, later);
        status = later;
      }
      const failures = await api.failures(20);
      const failing = status.failingNodes > 0 || !status.ready || isStuck;
      if (options.json)
        writeLine(
          streams.stdout,
          JSON.stringify({ ok: !failing, stuck: isStuck, status, failures: failures.items }, null, 2),
        );
      else for (const line of render(status, failures, isStuck)) writeLine(streams.stdout, line);
      exitWith(failing ? EXIT_FAILED : EXIT_OK);
    });
};
