import { EVENT_EXAMPLES } from './examples';
import { jsonSchemaOf } from '@policygen/sdk/contract';
import type { Topic } from '@policygen/sdk/contract';
import {
  LATEST_BUNDLES_TOPIC_CONFIG,
  NODE_BUNDLES_TOPIC_CONFIG,
  TOPICS,
  deadLetterTopic,
} from '@policygen/sdk/contract';

interface TopicDoc {
  readonly name: string;
  readonly title: string;
  readonly summary: string;
  readonly key: string;
  /** Partitions the services create it with (the deployment's POLICYGEN_PARTITIONS for the per-node ones). */
  readonly partitions: number;
  readonly producers: string;
  /** Topic settings other than the broker's defaults. */
  readonly config?: Readonly<Record<string, string>>;
}

const DOCS: Readonly<Record<Topic, TopicDoc>> = {
  [TOPICS.configChanges]: {
    name: 'configChanges',
    title: 'Committed change sets',
    summary:
      'Every committed change set at its gap-free revision, from the config-service outbox. One partition: one total order.',
    key: 'always "config"',
    partitions: 1,
    producers: 'config-service',
  },
  [TOPICS.generationRequests]: {
    name: 'generationRequests',
    title: 'Generation requests',
    summary: 'Nodes to generate again at a revision or a newer one (a consumer found a bundle incomplete).',
    key: 'node id (the partition says which generator instance owns the node)',
    partitions: 12,
    producers: 'distribution-service',
  },
  [TOPICS.nodeBundles]: {
    name: 'nodeBundles',
    title: 'Node bundles (compacted)',
    summary:
      "A node's new bundle (only when its hash changes; files by digest, manifest by digest) or its removal from the fleet. Compacted: read from the beginning, it gives every node's latest record (a bundle, or `node.deleted` for a node that left the fleet), then every change, whenever the consumer starts.",
    key: 'node id: every event of a node in one partition, in revision order; its latest survives compaction',
    partitions: 12,
    producers: 'generator-service',
    config: NODE_BUNDLES_TOPIC_CONFIG,
  },
  [TOPICS.generationEvents]: {
    name: 'generationEvents',
    title: 'Generation results',
    summary:
      'What generating a node gave: a new bundle, the same one, or a failure (the node keeps its last good bundle).',
    key: 'node id',
    partitions: 12,
    producers: 'generator-service',
  },
  [TOPICS.distributionEvents]: {
    name: 'distributionEvents',
    title: 'Distribution events',
    summary:
      'A relay confirmed it serves a bundle (with the lag of every stage), or a node fetched its bundle from its relay.',
    key: 'relay id',
    partitions: 12,
    producers: 'distribution-service',
  },
  [TOPICS.latestBundles]: {
    name: 'latestBundles',
    title: 'Latest bundle per node (compacted; deprecated)',
    summary:
      "Deprecated: the compacted nodeBundles topic gives every node's latest bundle; this one is written only when the distribution-service runs with POLICYGEN_LATEST_BUNDLES_TOPIC=on. Every node's latest distributed bundle, once its files are in the distribution-service's blob store (fetchable by digest); a tombstone (a record with no value) when the node left the fleet. Compacted: read from the beginning, it gives the fleet's current bundles, whenever the consumer starts.",
    key: 'node id: one record per node survives compaction',
    partitions: 12,
    producers: 'distribution-service',
    config: LATEST_BUNDLES_TOPIC_CONFIG,
  },
  [TOPICS.pipelineSummaries]: {
    name: 'pipelineSummaries',
    title: 'Pipeline summaries',
    summary:
      "One compact summary per batch: the generation results of a generator's slice (`generation.summary`: the batch's revision once, `[nodeId, outcome, hash]` per node, failures with their errors), or the confirmations and fetch reports of a batch the distribution-service published (`distribution.summary`: tuples, times in epoch ms). The per-node topics tell the same node by node; this one is for a consumer that follows the whole pipeline, as the config API does, at a cost per batch rather than per node.",
    key: '`generation` or `distribution`: the stage that published it',
    partitions: 1,
    producers: 'generator-service and distribution-service',
  },
};

/** Kafka binding 0.5.0's topicConfiguration: the settings it knows, typed as it wants them. */
function topicConfiguration(config: Readonly<Record<string, string>>): Record<string, unknown> {
  const configuration: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(config))
    configuration[name] = name === 'cleanup.policy' ? value.split(',') : Number(value);
  return configuration;
}

/** A topic's schema as an AsyncAPI payload: the JSON Schema the code validates with, without its own `$id`. */
function payloadOf(topic: Topic): Record<string, unknown> {
  const { $id: _id, $schema: _schema, title: _title, ...schema } = jsonSchemaOf(topic);
  return schema;
}

/**
 * The AsyncAPI 3 document of every topic (channels, messages with their keys and JSON Schemas,
 * partitioning, examples), from the same zod schemas the services validate with. Written to
 * `libs/events/asyncapi.json` by `npm run schemas`; a test keeps the file equal to this.
 */
export function asyncApiDocument(version: string): Record<string, unknown> {
  const topics = Object.values(TOPICS) as Topic[];
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  const messages: Record<string, unknown> = {};
  for (const topic of topics) {
    const doc = DOCS[topic];
    messages[doc.name] = {
      name: doc.name,
      title: doc.title,
      summary: doc.summary,
      contentType: 'application/json',
      payload: payloadOf(topic),
      bindings: { kafka: { key: { type: 'string', description: doc.key }, bindingVersion: '0.5.0' } },
      examples: EVENT_EXAMPLES[topic].map(({ key, event }) => ({
        name: `${String((event as { type: string }).type).replace(/\./g, '-')}-${key}`,
        headers: {},
        payload: event,
      })),
    };
    channels[doc.name] = {
      address: topic,
      title: doc.title,
      description: `${doc.summary} Produced by the ${doc.producers}. Key: ${doc.key}. A message no consumer can read goes to \`${deadLetterTopic(topic)}\` with its reason. In a namespaced deployment the topic is \`<namespace>.${topic}\`.`,
      messages: { [doc.name]: { $ref: `#/components/messages/${doc.name}` } },
      bindings: {
        kafka: {
          topic,
          partitions: doc.partitions,
          ...(doc.config ? { topicConfiguration: topicConfiguration(doc.config) } : {}),
          bindingVersion: '0.5.0',
        },
      },
    };
    operations[`receive${doc.name[0]?.toUpperCase()}${doc.name.slice(1)}`] = {
      action: 'receive',
      channel: { $ref: `#/channels/${doc.name}` },
      summary: `Consume ${doc.title.toLowerCase()}: at least once, in order per key.`,
      messages: [{ $ref: `#/channels/${doc.name}/messages/${doc.name}` }],
    };
  }
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Policygen events',
      version,
      description:
        'The topics of the Policygen pipeline. Every event carries `schemaVersion` and `type`; a consumer ignores fields it does not know. A `.v1` topic only ever gains optional fields (a test holds every schema to its first published form).',
    },
    defaultContentType: 'application/json',
    servers: {
      kafka: {
        host: 'localhost:9092',
        protocol: 'kafka',
        description: "The deployment's brokers (KAFKA_BROKERS)",
      },
    },
    channels,
    operations,
    components: { messages },
  };
}
