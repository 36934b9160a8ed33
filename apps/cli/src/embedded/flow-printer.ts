import { TOPICS, parseEvent } from '@policygen/events';
import type { GenerationEvent } from '@policygen/events';
import type { IncomingMessage, Messaging, MessageConsumer } from '@policygen/messaging';

interface Step {
  readonly revision: number;
  /** 0 committed, 1 generated (and failed), 2 on a relay, 3 fetched by the node: the order lines are printed in. */
  readonly stage: number;
  readonly relayId: string;
  readonly nodeIds: string[];
  removed: number;
  lagMs: number;
  readonly failed: GenerationEvent[];
  readonly recovered: string[];
}

const RED = '\u001b[31m';
const GREEN = '\u001b[32m';
const RESET = '\u001b[0m';
/** Failing nodes named one per line before the rest are only counted. */
const FAILURES_SHOWN = 10;

/** A few names, or how many there are. */
function summarise(nodeIds: readonly string[], noun: string): string {
  return nodeIds.length <= 3 ? nodeIds.join(', ') : `${nodeIds.length} ${noun}`;
}

function describeFailure(event: GenerationEvent): string {
  const error = event.errors[0];
  const directives = [...new Set(event.errors.flatMap((each) => each.directiveIds ?? []))];
  const rules = [...new Set(event.errors.flatMap((each) => each.ruleIds ?? []))];
  const where = [
    directives.length > 0 ? `directive ${directives.join(', ')}` : '',
    rules.length > 0 ? `rule ${rules.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join('; ');
  const message = (error?.message ?? '').split('\n')[0] ?? '';
  return `${event.nodeId} ${error?.code ?? 'FAILED'}${where ? ` (${where})` : ''}: ${message}`;
}

function describe(step: Step, colour: (text: string, code: string) => string): string[] {
  const prefix = `[revision ${step.revision}]`;
  const lag = `(+${step.lagMs} ms after the commit)`;
  if (step.stage === 0) return [`${prefix} committed`];
  if (step.stage === 2)
    return [`${prefix}     on relay ${step.relayId}: ${summarise(step.nodeIds, 'nodes')} ${lag}`];
  if (step.stage === 3)
    return [`${prefix}       fetched by ${summarise(step.nodeIds, 'nodes')} from ${step.relayId} ${lag}`];
  const lines: string[] = [];
  if (step.nodeIds.length > 0 || step.removed > 0)
    lines.push(
      `${prefix}   generated ${summarise(step.nodeIds, 'bundles')}${step.removed ? `, ${step.removed} removed` : ''} ${lag}`,
    );
  for (const event of step.failed.slice(0, FAILURES_SHOWN))
    lines.push(colour(`${prefix}   FAILED ${describeFailure(event)}`, RED));
  if (step.failed.length > 0) {
    const codes = new Map<string, number>();
    for (const event of step.failed) {
      const code = event.errors[0]?.code ?? 'FAILED';
      codes.set(code, (codes.get(code) ?? 0) + 1);
    }
    const byCode = [...codes].map(([code, count]) => `${code} ×${count}`).join(', ');
    const more =
      step.failed.length > FAILURES_SHOWN ? ` (${step.failed.length - FAILURES_SHOWN} more not shown)` : '';
    lines.push(
      colour(
        `${prefix}   ${step.failed.length} node(s) fail: ${byCode}; each keeps its last good bundle${more} — GET /api/v1/failures`,
        RED,
      ),
    );
  }
  if (step.recovered.length > 0)
    lines.push(colour(`${prefix}   recovered ${summarise(step.recovered, 'nodes')}`, GREEN));
  return lines;
}

/**
 * Follows changes through the pipeline on the console: each commit, the bundles generated, the
 * nodes that fail (in red, with code and directive) or recover, the relays that confirmed them,
 * with the time since the commit. Events are gathered for a moment, so that a revision reads as a
 * few lines, not one per batch.
 */
export async function printFlow(
  messaging: Messaging,
  write: (line: string) => void,
  options: { readonly gatherMs?: number; readonly colour?: boolean } = {},
): Promise<MessageConsumer> {
  const consumer = await messaging.createConsumer({
    groupId: 'policygen-start-console',
    topics: [TOPICS.configChanges, TOPICS.nodeBundles, TOPICS.generationEvents, TOPICS.distributionEvents],
  });
  const colour = (text: string, code: string): string => (options.colour ? `${code}${text}${RESET}` : text);
  const steps = new Map<string, Step>();
  const failing = new Set<string>();
  let timer: NodeJS.Timeout | null = null;
  const flush = (): void => {
    timer = null;
    const ready = [...steps.values()].sort((a, b) => a.revision - b.revision || a.stage - b.stage);
    steps.clear();
    for (const step of ready) for (const line of describe(step, colour)) write(line);
  };
  const step = (revision: number, stage: number, relayId = ''): Step => {
    const key = `${revision}|${stage}|${relayId}`;
    let found = steps.get(key);
    if (!found) {
      found = { revision, stage, relayId, nodeIds: [], removed: 0, lagMs: 0, failed: [], recovered: [] };
      steps.set(key, found);
    }
    return found;
  };
  const record = (message: IncomingMessage, topic: string): void => {
    if (topic === TOPICS.generationEvents) {
      const parsed = parseEvent(TOPICS.generationEvents, message.value.toString('utf8'));
      if (!parsed.ok) return;
      const event = parsed.event;
      if (event.outcome === 'failed') {
        failing.add(event.nodeId);
        step(event.revision, 1).failed.push(event);
      } else if (failing.delete(event.nodeId)) step(event.revision, 1).recovered.push(event.nodeId);
      return;
    }
    const event = JSON.parse(message.value.toString('utf8')) as Record<string, unknown>;
    const revision = Number(event['revision']);
    const fetched = event['type'] === 'node.fetched';
    const stage = topic === TOPICS.configChanges ? 0 : topic === TOPICS.nodeBundles ? 1 : fetched ? 3 : 2;
    const current = step(revision, stage, String(event['relayId'] ?? ''));
    if (stage === 0) return;
    current.nodeIds.push(String(event['nodeId']));
    if (event['type'] === 'node.deleted') current.removed++;
    const at = fetched ? Date.parse(String(event['fetchedAt'])) : Date.now();
    current.lagMs = Math.max(current.lagMs, at - Date.parse(String(event['committedAt'])));
  };
  await consumer.start(async (batch) => {
    for (const message of batch.messages) record(message, batch.topic);
    timer ??= setTimeout(flush, options.gatherMs ?? 250);
  });
  return consumer;
}
