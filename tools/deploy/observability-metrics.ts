/**
 * The metrics of the Policygen services that the `observability` compose profile relies on: the
 * Grafana dashboard (deploy/grafana/dashboards/policygen.json) queries only these, and
 * deploy/README.md documents each one. tools/deploy/observability.spec.ts holds the three together.
 *
 * Each is a metric family as the Prometheus text format of GET /metrics names it: a counter with its
 * `_total`, a histogram without the `_bucket`, `_count` and `_sum` of its series. The labels are the
 * metric's own; Prometheus adds `job` and `instance` to every series it scrapes, and a histogram's
 * buckets have `le`. (Kept out of the spec file because a test file exports nothing: jest/no-export.)
 */
export interface ObservabilityMetric {
  readonly name: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly labels: readonly string[];
  readonly help: string;
}

export const OBSERVABILITY_METRICS: readonly ObservabilityMetric[] = [
  {
    name: 'policygen_pipeline_lag_seconds',
    type: 'histogram',
    labels: ['stage', 'phase'],
    help: 'Time from a configuration change to a stage of the pipeline: generated, distributed, relay, fetched; phase steady (keeping up) or catchup (working off a backlog)',
  },
  {
    name: 'policygen_config_changes_total',
    type: 'counter',
    labels: [],
    help: 'Configuration changes committed by config-service',
  },
  {
    name: 'policygen_config_outbox_backlog',
    type: 'gauge',
    labels: [],
    help: 'Changes committed by config-service and not yet published to Kafka (its outbox)',
  },
  {
    name: 'policygen_generator_nodes_total',
    type: 'counter',
    labels: ['outcome'],
    help: 'Nodes handled by a generator, by outcome: generated (a new bundle), unchanged (the same bundle), failed',
  },
  {
    name: 'policygen_generator_nodes_failing',
    type: 'gauge',
    labels: ['code'],
    help: 'Nodes whose last generation failed, by error code',
  },
  {
    name: 'policygen_generator_cache_requests_total',
    type: 'counter',
    labels: ['cache', 'result'],
    help: 'Reuse in a generator, by cache (node: inputs unchanged, not rendered again; blob: file already in Redis) and result: hit or miss',
  },
  {
    name: 'policygen_kafka_consumer_lag',
    type: 'gauge',
    labels: ['group', 'topic', 'partition'],
    help: 'Messages of a partition not yet consumed by a consumer group',
  },
  {
    name: 'policygen_relay_revisions_behind',
    type: 'gauge',
    labels: ['relay'],
    help: 'Configuration revisions a relay has yet to catch up on, compared with its parent',
  },
  {
    name: 'policygen_relay_feed_entries_behind',
    type: 'gauge',
    labels: ['relay'],
    help: "Entries of its parent's feed a relay has yet to apply",
  },
  {
    name: 'policygen_http_request_duration_seconds',
    type: 'histogram',
    labels: ['method', 'route', 'status_code'],
    help: 'Duration of the HTTP requests a service answered, by method, route (the pattern, not the path) and status code',
  },
];
