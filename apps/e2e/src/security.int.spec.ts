import { randomBytes } from 'node:crypto';
import { Pipeline } from './testing/pipeline';
import { startPolicygen } from './testing/policygen-start';
import { describeSecuritySuite } from './testing/security-suite';

describeSecuritySuite(
  'the services as processes, on Kafka, Redis and Postgres',
  async () => {
    const pipeline = new Pipeline();
    await pipeline.start();
    await pipeline.startGenerator();
    const distribution = await pipeline.startDistribution();
    const relay = await pipeline.startRelay('root', distribution.url);
    await pipeline.importDemoFleet();
    return {
      configUrl: pipeline.configUrl,
      distributionUrl: distribution.url,
      relayUrl: relay.url,
      adminToken: pipeline.adminToken,
      stop: () => pipeline.stop(),
    };
  },
  240_000,
);

describeSecuritySuite(
  'policygen start (the embedded pipeline)',
  async () => {
    const started = await startPolicygen({ adminToken: randomBytes(24).toString('hex') });
    return {
      configUrl: started.url,
      distributionUrl: `${started.url}/distribution`,
      relayUrl: `${started.url}/relay`,
      adminToken: started.adminToken,
      stop: () => started.stop(),
    };
  },
  240_000,
);
