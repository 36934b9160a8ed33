/** The Kafka topics of the pipeline (architecture.md, "Events"); `.v1` is the schema generation. */
export const TOPICS = {
  configChanges: 'policygen.config.changes.v1',
  generationRequests: 'policygen.generation.requests.v1',
  /**
   * Compacted (key: node id): every node's new bundles and its removal (`node.deleted`). Read from
   * the beginning, it is the fleet's current state, then its changes (`NODE_BUNDLES_TOPIC_CONFIG`).
   */
  nodeBundles: 'policygen.node-bundles.v1',
  generationEvents: 'policygen.generation.events.v1',
  distributionEvents: 'policygen.distribution.events.v1',
  /**
   * Deprecated: the compacted `nodeBundles` topic holds every node's latest bundle now. Written only
   * when the distribution-service is asked to (`POLICYGEN_LATEST_BUNDLES_TOPIC=on`), for consumers
   * that read it: the latest distributed bundle of every node (key: node id), a tombstone once the
   * node left the fleet.
   */
  latestBundles: 'policygen.node-bundles.latest.v1',
  /**
   * One compact summary per batch the generator published (its slice's results) and per batch of
   * relay confirmations the distribution-service published: the per-node events' content, a batch a
   * message, for a consumer that follows the whole pipeline (the config API) rather than each node.
   */
  pipelineSummaries: 'policygen.pipeline.summaries.v1',
} as const;

export type Topic = (typeof TOPICS)[keyof typeof TOPICS];

/** Where a message that cannot be handled goes, with its error: it never stalls its partition. */
export function deadLetterTopic(topic: Topic): string {
  return `${topic}.dlq`;
}

/** The single key of the change log: one partition, one total order of revisions. */
export const CONFIG_CHANGES_KEY = 'config';

export type TopicNames = { readonly [K in keyof typeof TOPICS]: string };

/** The deployment's name of a canonical topic (handlers name canonical topics; names pass through). */
export function topicResolver(topics: TopicNames): (topic: string) => string {
  const names = new Map<string, string>(
    (Object.keys(TOPICS) as (keyof typeof TOPICS)[]).map((name) => [TOPICS[name], topics[name]]),
  );
  return (topic) => names.get(topic) ?? topic;
}

/**
 * The topic names of one deployment. A namespace (e.g. `staging`, or one per test) prefixes every
 * name, so several pipelines can share a broker without reading each other's events.
 */
export function topicsFor(namespace?: string): TopicNames {
  if (!namespace) return TOPICS;
  if (!/^[A-Za-z0-9._-]+$/.test(namespace))
    throw new Error(`a topic namespace uses letters, digits, '.', '_' and '-' only, not "${namespace}"`);
  return Object.fromEntries(
    Object.entries(TOPICS).map(([name, topic]) => [name, `${namespace}.${topic}`]),
  ) as unknown as TopicNames;
}

/**
 * The node-bundles topic's settings, as the generator and the distribution-service create it:
 * compacted, so that the topic keeps every node's latest record (a consumer that starts late reads
 * it from its start: the fleet's state, then what follows), segments rolled hourly so that
 * compaction reaches recent records. A removed node's last record is its `node.deleted` event.
 * Every record needs its key (the node id): a compacted topic refuses a record without one.
 */
export const NODE_BUNDLES_TOPIC_CONFIG: Readonly<Record<string, string>> = {
  'cleanup.policy': 'compact',
  'min.cleanable.dirty.ratio': '0.1',
  'segment.ms': String(60 * 60 * 1000),
};

/**
 * The deprecated latest-bundles topic's settings, as the distribution-service creates it: compacted (one record
 * per node survives), tombstones kept a day so that a consumer that reads at least daily sees every
 * deletion, and segments rolled hourly so that compaction reaches recent records.
 */
export const LATEST_BUNDLES_TOPIC_CONFIG: Readonly<Record<string, string>> = {
  'cleanup.policy': 'compact',
  'min.cleanable.dirty.ratio': '0.1',
  'segment.ms': String(60 * 60 * 1000),
  'delete.retention.ms': String(24 * 60 * 60 * 1000),
};
