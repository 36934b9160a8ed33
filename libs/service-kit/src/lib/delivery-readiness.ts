import type { DeliveryMonitor } from '@policygen/messaging';
import type { ReadinessCheck } from './readiness';

/**
 * Degraded (still ready) while a partition's delivery waits for a transient failure to pass: the
 * service serves what it has, and says what it is retrying and why.
 */
export function deliveryCheck(monitor: DeliveryMonitor): ReadinessCheck {
  return {
    name: 'delivery',
    check() {
      const waiting = monitor.waitingPartitions();
      if (waiting.length === 0) return { ready: true };
      const [first] = waiting;
      const since = first ? new Date(first.since).toISOString() : '';
      return {
        ready: true,
        degraded: true,
        reason: `retrying: ${first?.reason} (${first?.topic}/${first?.partition} since ${since}${
          waiting.length > 1 ? `, and ${waiting.length - 1} more partition(s)` : ''
        })`,
        details: { waiting },
      };
    },
  };
}
