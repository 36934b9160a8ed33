import type { KafkaConnection } from './transport/kafka-transport';
import { KafkaTransport } from './transport/kafka-transport';
import type { EventStreamConnection } from './transport/event-stream-transport';
import { EventStreamTransport } from './transport/event-stream-transport';
import type { EventTransport } from './transport/event-transport';
import type { SdkLogger } from './consumer/logger';

/**
 * Where the events come from: a Kafka cluster, or the event stream of `policygen start`. The same
 * consumer code runs on either; only this changes.
 */
export type Connection =
  | { readonly kafka: KafkaConnection; readonly namespace?: string }
  | { readonly stream: EventStreamConnection; readonly namespace?: string };

export function transportFor(connection: Connection, logger?: SdkLogger): EventTransport {
  return 'kafka' in connection
    ? new KafkaTransport(connection.kafka, logger)
    : new EventStreamTransport(connection.stream);
}

/**
 * The connection the environment describes: `POLICYGEN_KAFKA_BROKERS` (comma-separated host:port)
 * for Kafka, else `POLICYGEN_URL` for `policygen start`'s event stream (with `POLICYGEN_TOKEN`);
 * `POLICYGEN_TOPIC_NAMESPACE` if the deployment has one. Throws naming the variable when neither
 * is set or one is malformed.
 */
export function connectionFromEnvironment(environment: NodeJS.ProcessEnv = process.env): Connection {
  const namespace = environment['POLICYGEN_TOPIC_NAMESPACE'] || undefined;
  const brokers = environment['POLICYGEN_KAFKA_BROKERS'];
  if (brokers) {
    const list = brokers.split(',').map((broker) => broker.trim());
    const bad = list.find((broker) => !/^[^\s:]+:\d{1,5}$/.test(broker));
    if (bad !== undefined) throw new Error(`POLICYGEN_KAFKA_BROKERS: "${bad}" is not host:port`);
    return { kafka: { brokers: list }, ...(namespace ? { namespace } : {}) };
  }
  const url = environment['POLICYGEN_URL'];
  if (url) {
    const token = environment['POLICYGEN_TOKEN'];
    return { stream: { url, ...(token ? { token } : {}) }, ...(namespace ? { namespace } : {}) };
  }
  throw new Error(
    'set POLICYGEN_KAFKA_BROKERS (host:port,…) to read from Kafka, or POLICYGEN_URL (e.g. http://127.0.0.1:3000) to read from policygen start',
  );
}
