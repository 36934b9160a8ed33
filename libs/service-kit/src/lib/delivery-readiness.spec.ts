import pino from 'pino';
import type { IncomingMessage } from '@policygen/messaging';
import { DeliveryMonitor, TransientFailure } from '@policygen/messaging';
import { deliveryCheck } from './delivery-readiness';

const message: IncomingMessage = {
  topic: 'bundles',
  partition: 2,
  offset: '7',
  key: 'k',
  value: Buffer.from('v'),
  headers: {},
  timestamp: 0,
};

describe('deliveryCheck', () => {
  it('is degraded, still ready, saying what it retries and why, while a partition waits; ready again once it recovers', async () => {
    const monitor = new DeliveryMonitor(pino({ level: 'silent' }));
    const check = deliveryCheck(monitor);
    expect(await check.check()).toEqual({ ready: true });
    const observer = monitor.observe('policygen-distribution', 'bundles', 2);
    observer.transient?.([message], new TransientFailure('the cache does not answer'), 1, 200);
    const answer = await check.check();
    expect(answer).toMatchObject({ ready: true, degraded: true });
    expect(answer.reason).toMatch(/^retrying: the cache does not answer \(bundles\/2 since \d{4}-\d\d-\d\dT/);
    observer.recovered?.([message]);
    expect(await check.check()).toEqual({ ready: true });
  });
});
