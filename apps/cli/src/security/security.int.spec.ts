import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { buildDemoFleet } from '@policygen/fleets';
import { Pipeline } from '@policygen/testing-pipeline';
import { eventually } from '@policygen/testing-infra';
import { MOUNTS, settled, startEmbeddedPipeline } from '../embedded/embedded-pipeline';
import { describeSecuritySuite } from '../testing/security-suite';

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
    const directory = mkdtempSync(join(tmpdir(), 'policygen-security-'));
    const pipeline = await startEmbeddedPipeline({
      host: '127.0.0.1',
      port: 0,
      dataDir: directory,
      logger: pino({ level: 'silent' }),
    });
    const imported = await fetch(`${pipeline.url}/api/v1/import`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${pipeline.adminToken}` },
      body: JSON.stringify(buildDemoFleet()),
    });
    const { revision } = (await imported.json()) as { revision: number };
    await eventually(() => settled(pipeline, revision), {
      what: 'the demo fleet distributed',
      timeoutMs: 120_000,
    });
    return {
      configUrl: pipeline.url,
      distributionUrl: `${pipeline.url}${MOUNTS.distribution}`,
      relayUrl: `${pipeline.url}${MOUNTS.relay}`,
      adminToken: pipeline.adminToken,
      async stop() {
        await pipeline.stop();
        rmSync(directory, { recursive: true, force: true });
      },
    };
  },
  180_000,
);
