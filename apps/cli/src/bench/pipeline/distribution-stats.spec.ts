import fc from 'fast-check';
import { distributionOf } from './distribution-stats';
import { parentRequests } from './pipeline-bench';

describe('distributionOf', () => {
  it('gives ordered quantiles, the largest value as max, and the count', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 1e6, noNaN: true }), { minLength: 1 }), (values) => {
        const distribution = distributionOf(values);
        expect(distribution.count).toBe(values.length);
        const { p50, p95, p99, max } = distribution as { p50: number; p95: number; p99: number; max: number };
        expect(p50).toBeLessThanOrEqual(p95);
        expect(p95).toBeLessThanOrEqual(p99);
        expect(p99).toBeLessThanOrEqual(max);
        expect(max).toBeCloseTo(Math.max(...values), 0);
      }),
    );
  });

  it('takes the nearest rank', () => {
    const values = Array.from({ length: 100 }, (_, index) => index + 1);
    expect(distributionOf(values)).toEqual({ count: 100, p50: 50, p95: 95, p99: 99, max: 100 });
    expect(distributionOf([])).toEqual({ count: 0, p50: null, p95: null, p99: null, max: null });
  });
});

describe('parentRequests', () => {
  it('sums the parent-requests counter over its kinds when the relay has it', () => {
    const metrics = [
      '# HELP policygen_relay_parent_requests_total HTTP requests to the parent',
      '# TYPE policygen_relay_parent_requests_total counter',
      'policygen_relay_parent_requests_total{kind="feed"} 3',
      'policygen_relay_parent_requests_total{kind="blobs"} 12',
      'policygen_relay_blob_fetches_total 40',
    ].join('\n');
    expect(parentRequests(metrics, 10)).toEqual({
      requests: 15,
      requestsSource: 'parent-requests-metric',
      blobFetches: 40,
    });
  });

  it('estimates from the blob fetches and the feed pages without it, and says so', () => {
    const estimate = parentRequests('policygen_relay_blob_fetches_total 4064\n', 2_500);
    expect(estimate.requests).toBe(4064 + 4);
    expect(estimate.blobFetches).toBe(4064);
    expect(estimate.requestsSource).toMatch(/^estimated/);
  });
});
