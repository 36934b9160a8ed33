import type { Connection } from './connection';
import { transportFor } from './connection';
import type { EventConsumerOptions } from './consumer/event-consumer';
import { EventConsumer } from './consumer/event-consumer';
import type { PositionStore } from './transport/position-store';

export interface CreateConsumerOptions extends Omit<EventConsumerOptions, 'transport' | 'namespace'> {
  /**
   * Where a consumer of `policygen start`'s stream keeps its positions (default: in memory, so a
   * restarted one reads its topics from the start again). Kafka keeps them in the group.
   */
  readonly positions?: PositionStore;
}

/** A consumer of the given connection (see `connectionFromEnvironment`): Kafka or `policygen start`. */
export function createConsumer(connection: Connection, options: CreateConsumerOptions): EventConsumer {
  const { positions, ...consumerOptions } = options;
  const source: Connection =
    positions && 'stream' in connection
      ? { ...connection, stream: { ...connection.stream, positions } }
      : connection;
  return new EventConsumer({
    ...consumerOptions,
    transport: transportFor(source, options.logger),
    ...(connection.namespace ? { namespace: connection.namespace } : {}),
  });
}
