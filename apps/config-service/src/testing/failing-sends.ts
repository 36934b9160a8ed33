import type { Messaging } from '@policygen/messaging';

/**
 * The real messaging, whose producer's sends fail while `failing()` says so: a broker outage as
 * the publisher sees it, without stopping the shared broker.
 */
export function withFailingSends(messaging: Messaging, failing: () => boolean): Messaging {
  return {
    createAdmin: () => messaging.createAdmin(),
    createConsumer: (options) => messaging.createConsumer(options),
    async createProducer(options) {
      const producer = await messaging.createProducer(options);
      return {
        send: (topic, messages) =>
          failing()
            ? Promise.reject(new Error('broker unreachable (injected)'))
            : producer.send(topic, messages),
        sendAll: (sends) =>
          failing() ? Promise.reject(new Error('broker unreachable (injected)')) : producer.sendAll(sends),
        close: () => producer.close(),
      };
    },
  };
}
