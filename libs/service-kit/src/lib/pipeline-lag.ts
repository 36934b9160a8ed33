import { Histogram } from 'prom-client';
import type { Registry } from 'prom-client';

/** The stages of a change's way, each measured from the revision's commit. */
export const LAG_STAGES = ['generated', 'distributed', 'relay', 'fetched'] as const;
export type LagStage = (typeof LAG_STAGES)[number];

/**
 * `steady`: a change's own bundles. `catchup`: the regeneration after a restart or an import,
 * kept apart so that a snapshot of the whole fleet does not stand in the changes' percentiles.
 */
export type LagPhase = 'steady' | 'catchup';

export const PIPELINE_LAG_METRIC = 'policygen_pipeline_lag_seconds';

/** The one histogram of the pipeline's lag, by stage, phase and relay, in whichever service sees the stage. */
export function pipelineLagHistogram(registry: Registry): Histogram<'stage' | 'phase' | 'relay'> {
  const existing = registry.getSingleMetric(PIPELINE_LAG_METRIC);
  if (existing) return existing as Histogram<'stage' | 'phase' | 'relay'>;
  return new Histogram({
    name: PIPELINE_LAG_METRIC,
    help: "From a revision's commit to each stage of its bundle: generated, written to the root feed, on a relay, fetched by the node",
    labelNames: ['stage', 'phase', 'relay'],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
}
