import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { MessageTooLargeError } from '@policygen/messaging';
import type { PublisherObserver } from './bundle-publisher';

/** The generator's own metrics: what it published, what the bus refused, how its cycles fail. */
export class GeneratorMetrics implements PublisherObserver {
  private readonly published: Counter;
  private readonly refused: Counter;
  private readonly cycleFailures: Counter<'retriable'>;
  private readonly failing: Gauge;

  constructor(registry: Registry) {
    const registers = [registry];
    this.published = new Counter({
      name: 'policygen_generator_bundles_published_total',
      help: 'node.bundle events published',
      registers,
    });
    this.refused = new Counter({
      name: 'policygen_generator_bundles_refused_total',
      help: 'Bundles whose event the bus refused as too large (the node keeps its last bundle)',
      registers,
    });
    this.cycleFailures = new Counter({
      name: 'policygen_generator_cycle_failures_total',
      help: 'Generation cycles that failed (snapshot, cache or bus), by whether a retry can succeed',
      labelNames: ['retriable'],
      registers,
    });
    this.failing = new Gauge({
      name: 'policygen_generator_consecutive_failures',
      help: 'Generation cycles failed in a row (0: the last one succeeded)',
      registers,
    });
  }

  bundlesPublished(count: number): void {
    this.published.inc(count);
  }

  bundlesTooLarge(nodeIds: readonly string[], _error: MessageTooLargeError): void {
    this.refused.inc(nodeIds.length);
  }

  cycleFailed(retriable: boolean, consecutive: number): void {
    this.cycleFailures.inc({ retriable: String(retriable) });
    this.failing.set(consecutive);
  }

  cycleSucceeded(): void {
    this.failing.set(0);
  }
}
