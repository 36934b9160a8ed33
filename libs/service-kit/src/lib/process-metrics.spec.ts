import perfHooks from 'node:perf_hooks';
import { Registry } from 'prom-client';
import { produceEncodings } from '@policygen/messaging';
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
});
