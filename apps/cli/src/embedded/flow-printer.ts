import { TOPICS } from '@policygen/events';
import type { IncomingMessage, Messaging, MessageConsumer } from '@policygen/messaging';

interface Step {
  readonly revision: number;
  /** 0 committed, 1 generated, 2 on a relay: the order lines are printed in. */
  readonly stage: number;
  readonly relayId: string;
  readonly nodeIds: string[];
  removed: number;
  lagMs: number;
}

/** A few names, or how many there are. */
function summarise(nodeIds: readonly string[], noun: string): string {
  return nodeIds.length <= 3 ? nodeIds.join(', ') : `${nodeIds.length} ${noun}`;
}

function describe(step: Step): string {
  const prefix = `[revision ${step.revision}]`;
  const lag = `(+${step.lagMs} ms after the commit)`;
  if (step.stage === 0) return `${prefix} committed`;
  if (step.stage === 1)
    return `${prefix}   generated ${summarise(step.nodeIds, 'bundles')}${step.removed ? `, ${step.removed} removed` : ''} ${lag}`;
  return `${prefix}     on relay ${step.relayId}: ${summarise(step.nodeIds, 'nodes')} ${lag}`;
}

/**
 * Follows changes through the pipeline on the console: each commit, the bundles generated, the
 * relays that confirmed them, with the time since the commit. Events are gathered for a moment,
 * so that a revision reads as three lines, not one per batch.
 */
export async function printFlow(
  messaging: Messaging,
  write: (line: string) => void,
  gatherMs = 250,
): Promise<MessageConsumer> {
  const consumer = await messaging.createConsumer({
    groupId: 'policygen-start-console',
    topics: [TOPICS.configChanges, TOPICS.nodeBundles, TOPICS.distributionEvents],
  });
  const steps = new Map<string, Step>();
  let timer: NodeJS.Timeout | null = null;
  const flush = (): void => {
    timer = null;
    const ready = [...steps.values()].sort((a, b) => a.revision - b.revision || a.stage - b.stage);
    steps.clear();
    for (const step of ready) write(describe(step));
  };
  const record = (message: IncomingMessage, topic: string): void => {
    const event = JSON.parse(message.value.toString('utf8')) as Record<string, unknown>;
    const revision = Number(event['revision']);
    const stage = topic === TOPICS.configChanges ? 0 : topic === TOPICS.nodeBundles ? 1 : 2;
    const relayId = String(event['relayId'] ?? '');
    const key = `${revision}|${stage}|${relayId}`;
    const step = steps.get(key) ?? { revision, stage, relayId, nodeIds: [], removed: 0, lagMs: 0 };
    steps.set(key, step);
    if (stage === 0) return;
    step.nodeIds.push(String(event['nodeId']));
    if (event['type'] === 'node.deleted') step.removed++;
    step.lagMs = Math.max(step.lagMs, Date.now() - Date.parse(String(event['committedAt'])));
  };
  await consumer.start(async (batch) => {
    for (const message of batch.messages) record(message, batch.topic);
    timer ??= setTimeout(flush, gatherMs);
  });
  return consumer;
}
