import type { Connection } from './connection';
import { transportFor } from './connection';
import type { EventConsumerOptions } from './consumer/event-consumer';
import { EventConsumer } from './consumer/event-consumer';

/** A consumer of the given connection (see `connectionFromEnvironment`): Kafka or `policygen start`. */
export function createConsumer(
  connection: Connection,
  options: Omit<EventConsumerOptions, 'transport' | 'namespace'>,
): EventConsumer {
  return new EventConsumer({
    ...options,
    transport: transportFor(connection),
    ...(connection.namespace ? { namespace: connection.namespace } : {}),
  });
}
