import perfHooks from 'node:perf_hooks';
import { Registry } from 'prom-client';
import { produceEncodings } from '@policygen/messaging';
import { requestTimeoutSweep } from '@policygen/sdk';
import { collectProcessMetrics, EVENT_LOOP_SAMPLING_MS } from './process-metrics';

describe('collectProcessMetrics', () => {
  afterEach(() => jest.restoreAllMocks());

  it("reports the process's standard metrics, the event loop's lag among them", async () => {
    const registry = new Registry();
    collectProcessMetrics(registry);
    const names = (await registry.getMetricsAsJSON()).map((metric) => metric.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'process_cpu_seconds_total',
        'process_resident_memory_bytes',
        'nodejs_heap_size_used_bytes',
        'nodejs_eventloop_lag_p99_seconds',
        'nodejs_gc_duration_seconds',
      ]),
    );
  });

  it('samples the event loop every 100 ms, not every 10 (a timer waking every process 100 times a second)', () => {
    const monitor = jest.spyOn(perfHooks, 'monitorEventLoopDelay');
    collectProcessMetrics(new Registry());
    expect(EVENT_LOOP_SAMPLING_MS).toBe(100);
    expect(monitor).toHaveBeenCalledWith({ resolution: EVENT_LOOP_SAMPLING_MS });
  });

  it("reports the process's Kafka produce requests by the encoder that wrote them", async () => {
    const registry = new Registry();
    collectProcessMetrics(registry);
    const values = (await registry.getSingleMetric('policygen_kafka_produce_requests_total')?.get())?.values;
    const counts = produceEncodings();
    expect(values?.map((value) => [value.labels['encoder'], value.value])).toEqual([
      ['ours', counts.ours],
      ['kafkajs', counts.kafkajs],
    ]);
  });

  it('reports the broker connections whose requests the sweep times out, and the requests it timed out', async () => {
    const registry = new Registry();
    collectProcessMetrics(registry);
    const connection = {
      enforceRequestTimeout: true,
      requestTimeout: 30_000,
      inflight: new Map([[1, { sentAt: 0, requestTimeout: 30_000, timeoutRequest: () => undefined }]]),
      isConnected: () => true,
      destroy: () => undefined,
    };
    const before = requestTimeoutSweep.timedOut;
    requestTimeoutSweep.add(connection);
    try {
      requestTimeoutSweep.sweep(60_000);
      const connections = await registry.getSingleMetric('policygen_kafka_connections')?.get();
      const timeouts = await registry.getSingleMetric('policygen_kafka_request_timeouts_total')?.get();
      expect(connections?.values[0]?.value).toBe(requestTimeoutSweep.watching.connections);
      expect(requestTimeoutSweep.watching.connections).toBeGreaterThanOrEqual(1);
      expect(timeouts?.values[0]?.value).toBe(before + 1);
    } finally {
      requestTimeoutSweep.remove(connection);
    }
  });
});
