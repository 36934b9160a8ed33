import type { Histogram, Registry } from 'prom-client';
import type { Confirmation, FeedBundle } from '../feed';
import type { ConfirmationSink } from '../http/feed.controller';
import { pipelineLagHistogram } from '@policygen/service-kit';

/**
 * The last stage of a change: the node fetched its new bundle. Counted once per node and bundle
 * (an agent asks every few minutes; only the first fetch of a bundle ends its way), in this relay's
 * metrics, and reported up the tree with the confirmations (the config API's node status has it).
 */
export class FetchRecorder {
  private readonly lag: Histogram<'stage' | 'phase' | 'relay'>;
  private readonly lastFetched = new Map<string, string>();

  constructor(
    private readonly relayId: string,
    registry: Registry,
    private readonly reports: ConfirmationSink,
  ) {
    this.lag = pipelineLagHistogram(registry);
  }

  fetched(nodeId: string, bundle: FeedBundle, now = Date.now()): void {
    if (this.lastFetched.get(nodeId) === bundle.hash) return;
    this.lastFetched.set(nodeId, bundle.hash);
    this.lag.observe(
      { stage: 'fetched', phase: bundle.catchUp ? 'catchup' : 'steady', relay: this.relayId },
      Math.max(0, now - Date.parse(bundle.committedAt)) / 1000,
    );
    const at = new Date(now).toISOString();
    const report: Confirmation = {
      relayId: this.relayId,
      nodeId,
      hash: bundle.hash,
      revision: bundle.revision,
      committedAt: bundle.committedAt,
      generatedAt: bundle.generatedAt,
      distributedAt: bundle.distributedAt,
      confirmedAt: at,
      fetchedAt: at,
      ...(bundle.catchUp ? { catchUp: true } : {}),
    };
    // Lag is reported, never waited for: a parent away must not slow a node's fetch.
    this.reports.confirm([report]).catch(() => undefined);
  }
}
