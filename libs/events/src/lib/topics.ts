/** The Kafka topics of the pipeline (architecture.md, "Events"); `.v1` is the schema generation. */
export const TOPICS = {
  configChanges: 'policygen.config.changes.v1',
  generationRequests: 'policygen.generation.requests.v1',
  nodeBundles: 'policygen.node-bundles.v1',
  generationEvents: 'policygen.generation.events.v1',
  distributionEvents: 'policygen.distribution.events.v1',
} as const;

export type Topic = (typeof TOPICS)[keyof typeof TOPICS];

/** Where a message that cannot be handled goes, with its error: it never stalls its partition. */
export function deadLetterTopic(topic: Topic): string {
  return `${topic}.dlq`;
}

/** The single key of the change log: one partition, one total order of revisions. */
export const CONFIG_CHANGES_KEY = 'config';
