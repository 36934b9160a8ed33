import type { Registry } from 'prom-client';
import { Counter, Gauge, collectDefaultMetrics } from 'prom-client';
import { produceEncodings } from '@policygen/messaging';
import { requestTimeoutSweep } from '@policygen/sdk';

/**
 * How often the event loop's delay is sampled, in ms. prom-client's default (10 ms) keeps a timer
 * waking the loop a hundred times a second in every process, busy or idle: 7 CPU ms a second each
 * on this project's machines, about a twentieth of what the four services spend per second under
 * the benchmark's steady load. Every 100 ms the lag a person or an alert acts on (tens of ms and
 * up) is still caught, for 1 ms a second.
 */
export const EVENT_LOOP_SAMPLING_MS = 100;

/**
 * The process's standard metrics (`process_*`, `nodejs_*`: CPU, memory, heap, GC, event loop lag)
 * in `registry`, as every Policygen process reports them; its Kafka produce requests by encoder,
 * its broker connections and the requests it timed out (`requestTimeoutSweep`).
 */
export function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLING_MS });
  new Counter({
    name: 'policygen_kafka_produce_requests_total',
    help: "Kafka produce requests of this process, by the encoder that wrote them: ours in one pass, or kafkajs's for what ours declines (compression, other values)",
    labelNames: ['encoder'],
    registers: [registry],
    collect() {
      const counts = produceEncodings();
      this.reset();
      this.inc({ encoder: 'ours' }, counts.ours);
      this.inc({ encoder: 'kafkajs' }, counts.kafkajs);
    },
  });
  new Gauge({
    name: 'policygen_kafka_connections',
    help: "Broker connections of this process whose requests are timed out by its one sweep (kafkajs's interval per connection, replaced)",
    registers: [registry],
    collect() {
      this.set(requestTimeoutSweep.watching.connections);
    },
  });
  new Counter({
    name: 'policygen_kafka_request_timeouts_total',
    help: 'Kafka requests of this process left unanswered past their requestTimeout on an open connection, and timed out',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(requestTimeoutSweep.timedOut);
    },
  });
}
