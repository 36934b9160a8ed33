import type { ReadinessAnswer } from '@policygen/service-kit';
import type { GenerationStatus } from '../generation/generation-loop';
import { NO_SHARE_YET } from '../generation/generation-loop';
import type { NodeFailures } from '@policygen/events';

/** Cycles failed in a row before the generator says it is not ready (one failure may be a blip). */
export const FAILURES_BEFORE_UNREADY = 3;

/**
 * Whether the generator can be relied on: not while it loads the configuration or catches up,
 * nor while its cycles keep failing (at once when the bus refuses them for good). Nodes whose own
 * configuration fails make it degraded, still ready: restarting it would not mend them.
 */
export function generationReadiness(status: GenerationStatus, failures: NodeFailures): ReadinessAnswer {
  const details = {
    revision: status.revision,
    ownership: status.ownership,
    held: status.held,
    pending: status.pending,
  };
  if (!status.ready)
    return {
      ready: false,
      reason:
        status.ownership === NO_SHARE_YET
          ? 'waiting for its share of the nodes (the consumer group assigns it)'
          : 'loading the configuration from the config service',
      details,
    };
  const failing = status.failing;
  if (failing && (!failing.retriable || failing.consecutiveFailures >= FAILURES_BEFORE_UNREADY))
    return {
      ready: false,
      reason: `generation cycles fail (${failing.consecutiveFailures} in a row since ${failing.since}): ${failing.error}`,
      details,
    };
  if (!status.caughtUp)
    return {
      ready: false,
      reason: `catching up: ${status.pending} nodes to generate at revision ${status.revision}`,
      details,
    };
  if (failures.count > 0) {
    const byCode = Object.fromEntries([...failures.byCode()].sort(([a], [b]) => (a < b ? -1 : 1)));
    return {
      ready: true,
      degraded: true,
      reason: `${failures.count} node(s) fail to generate and keep their last good bundle`,
      details: { ...details, failingNodes: failures.count, failuresByCode: byCode },
    };
  }
  return { ready: true, details };
}
