import { createServer } from 'node:http';
import { join } from 'node:path';
import { ExpressAdapter } from '@nestjs/platform-express';
import express from 'express';
import type { Express, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { MemoryBundleCache } from '@policygen/cache';
import { configServiceAuthenticator, createConfigServiceApp } from '@policygen/config-service';
import type { DistributionService } from '@policygen/distribution-service';
import { startDistributionService } from '@policygen/distribution-service';
import { TOPICS } from '@policygen/events';
import type { GeneratorService } from '@policygen/generator-service';
import { startGeneratorService } from '@policygen/generator-service';
import type { InProcessMessaging } from '@policygen/messaging';
import { createInProcessMessaging } from '@policygen/messaging';
import type { ReadinessCheck } from '@policygen/service-kit';
import type { Authenticator } from '@policygen/service-kit';
import { NO_CREDENTIALS, prefixedChecks } from '@policygen/service-kit';
import { dashboardFiles } from '@policygen/service-kit';
import type { ApiTokenStore, ConfigStore, JournalRecovery } from '@policygen/store';
import {
  FileApiTokenStore,
  FileConfigStore,
  HttpSnapshotSource,
  MemoryApiTokenStore,
  MemoryConfigStore,
} from '@policygen/store';
import { Counter, Gauge, Registry } from 'prom-client';
import { SecretsFile } from './embedded-secrets';
import { eventStreamRouter } from './event-stream';

export interface EmbeddedPipelineOptions {
  readonly host: string;
  readonly port: number;
  /** The distribution-service's files (its feed and blobs: relay root's). */
  readonly dataDir: string;
  /**
   * Keep the configuration, the API tokens and the secrets under `dataDir` too, crash-safe, and
   * resume from them (default: in memory, for this run only).
   */
  readonly persistent?: boolean;
  readonly logger: Logger;
  /** The bootstrap admin's API token (default: one generated for this run). */
  readonly adminToken?: string;
}

/**
 * Where each service answers, under the one address. Relay `root` is the distribution-service
 * (it serves the root's nodes from its own feed): its routes answer under `/relay` too, the
 * address its nodes are given.
 */
export const MOUNTS = {
  generator: '/generator',
  distribution: '/distribution',
  relay: '/relay',
} as const;

export interface EmbeddedPipeline {
  readonly url: string;
  /** The bootstrap admin's API token: `Authorization: Bearer <token>` on the config API. */
  readonly adminToken: string;
  readonly messaging: InProcessMessaging;
  readonly generator: GeneratorService;
  readonly distribution: DistributionService;
  /** The configuration's store. */
  readonly store: ConfigStore;
  /** The configuration's revision this run resumed from (a persistent data directory); 0: it started empty. */
  readonly resumedAt: number;
  /** Where this run keeps its secrets, e.g. the dashboard's token (nowhere but memory unless persistent). */
  readonly secrets: SecretsFile;
  /**
   * Each service's own Express app, by the path it is mounted at ('' for the config API): their
   * routers list every route (the test that every route asks for a credential walks them).
   */
  readonly services: ReadonlyMap<string, Express>;
  /** Messages the generator and the distribution-service have not yet committed. */
  backlog(): Promise<number>;
  stop(): Promise<void>;
}

const GROUPS = { generator: 'policygen-generator', distribution: 'policygen-distribution' } as const;

/**
 * Every service in this process, on one HTTP address: the config API at the root, the others
 * under their mount points. They run on the in-process bus, the in-memory (or, persistent, the
 * journaled) config store and the in-memory cache, through the same ports as Kafka, Postgres and
 * Redis. The distribution-service is relay `root` too (it serves the whole tree's nodes).
 */
export async function startEmbeddedPipeline(options: EmbeddedPipelineOptions): Promise<EmbeddedPipeline> {
  const { logger } = options;
  const messaging = createInProcessMessaging();
  const persistent = options.persistent ?? false;
  const secrets = await SecretsFile.open(persistent ? join(options.dataDir, 'secrets.json') : null);
  const tokenSecret = secrets.secrets.nodeTokenSecret;
  const adminToken = await secrets.adminToken(options.adminToken);
  // The generator and the distribution-service read the configuration as any reader would.
  const serviceToken = secrets.secrets.serviceToken;
  const registry = new Registry();
  const { store, apiTokens } = await openStores(options, registry);
  const resumedAt = (await store.snapshot()).revision;
  if (resumedAt > 0)
    logger.info({ revision: resumedAt, dataDir: options.dataDir }, 'resumed from the data directory');
  const cache = new MemoryBundleCache();
  const root = express();
  root.disable('x-powered-by');
  const mounted = new Map<string, RequestHandler>();
  const serviceApps = new Map<string, Express>();
  for (const path of Object.values(MOUNTS))
    root.use(path, (request, response, next) => {
      const handler = mounted.get(path);
      if (handler) handler(request, response, next);
      else response.status(503).json({ statusCode: 503, message: `${path} is starting` });
    });
  const streamAdmin = await messaging.createAdmin();
  const streamProducer = await messaging.createProducer();
  // The config app authenticates the event stream too, once it exists (its tokens live in it).
  let authenticator: Authenticator = NO_CREDENTIALS;
  root.use(
    '/events',
    eventStreamRouter({
      log: messaging.log,
      producer: streamProducer,
      admin: streamAdmin,
      logger: logger.child({ service: 'event-stream' }),
      registry,
      authenticator: { authenticate: (token) => authenticator.authenticate(token) },
    }),
  );
  const configExpress = express();
  serviceApps.set('', configExpress);
  // The root's readiness covers every service of the process, once they are there.
  let services: ReadinessCheck[] = [
    { name: 'services', check: () => ({ ready: false, reason: 'the other services are starting' }) },
  ];
  const configApp = await createConfigServiceApp({
    store,
    apiTokens,
    environmentTokens: { admin: adminToken, services: serviceToken },
    messaging,
    nodeTokenSecret: tokenSecret,
    registry,
    httpAdapter: new ExpressAdapter(configExpress),
    logger: logger.child({ service: 'config-service' }),
    extraReadiness: () => services,
  });
  authenticator = configServiceAuthenticator(configApp);
  try {
    root.use(dashboardFiles());
  } catch (error) {
    logger.warn({ err: error }, 'the dashboard is not served');
  }
  root.use(configExpress);

  const server = createServer(root);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const url = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;

  const mount = (path: string): ExpressAdapter => {
    const app = express();
    mounted.set(path, app);
    serviceApps.set(path, app);
    return new ExpressAdapter(app);
  };
  const shared = { messaging, cache, logger, topics: TOPICS, instanceId: 'embedded', partitions: 12 };
  const generator = await startGeneratorService({
    ...shared,
    logger: logger.child({ service: 'generator-service' }),
    snapshots: new HttpSnapshotSource(url, serviceToken),
    groupId: GROUPS.generator,
    defaultMetrics: false,
    httpAdapter: mount(MOUNTS.generator),
  });
  const distribution = await startDistributionService({
    ...shared,
    logger: logger.child({ service: 'distribution-service' }),
    defaultMetrics: false,
    snapshots: new HttpSnapshotSource(url, serviceToken),
    dataDir: `${options.dataDir}/distribution`,
    tokenSecret,
    groupId: GROUPS.distribution,
    httpAdapter: mount(MOUNTS.distribution),
  });
  const distributionApp = serviceApps.get(MOUNTS.distribution);
  if (distributionApp) {
    mounted.set(MOUNTS.relay, distributionApp);
    serviceApps.set(MOUNTS.relay, distributionApp);
  }

  services = [
    ...prefixedChecks('generator', generator.readiness),
    ...prefixedChecks('distribution', distribution.readiness),
  ];

  return {
    url,
    adminToken,
    messaging,
    services: serviceApps,
    generator,
    distribution,
    store,
    resumedAt,
    secrets,
    async backlog() {
      let behind = 0;
      for (const group of Object.values(GROUPS))
        for (const { lag } of await streamAdmin.consumerLag(group)) behind += lag;
      return behind;
    },
    async stop() {
      await distribution.stop();
      await generator.stop();
      await configApp.close();
      await streamProducer.close();
      await streamAdmin.close();
      await cache.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The configuration's and the tokens' stores: in memory, or journaled under the data directory. A
 * journal's end torn by a crash is dropped at opening: logged, and counted in metrics.
 */
async function openStores(
  options: EmbeddedPipelineOptions,
  registry: Registry,
): Promise<{ store: ConfigStore; apiTokens: ApiTokenStore }> {
  if (!options.persistent) return { store: new MemoryConfigStore(), apiTokens: new MemoryApiTokenStore() };
  const store = new FileConfigStore({ file: join(options.dataDir, 'config', 'changes.journal') });
  const apiTokens = new FileApiTokenStore(join(options.dataDir, 'config', 'api-tokens.journal'));
  await store.migrate();
  await apiTokens.migrate();
  const records = new Gauge({
    name: 'policygen_embedded_journal_records',
    help: "Records read from a journal of the data directory when this run opened it (the configuration's, the API tokens')",
    labelNames: ['journal'],
    registers: [registry],
  });
  const repairs = new Counter({
    name: 'policygen_embedded_journal_repairs_total',
    help: 'Journal ends torn by a crash (a record cut short), dropped when this run opened the journal',
    labelNames: ['journal'],
    registers: [registry],
  });
  const recoveries: [string, JournalRecovery | null][] = [
    ['config', store.journalDatabase.recovery],
    ['api-tokens', apiTokens.recovery],
  ];
  for (const [journal, recovery] of recoveries) {
    if (!recovery) continue;
    records.set({ journal }, recovery.records);
    repairs.inc({ journal }, 0);
    if (recovery.tornBytes === 0) continue;
    repairs.inc({ journal });
    options.logger.warn(
      { journal, tornBytes: recovery.tornBytes, records: recovery.records },
      'a record cut short by a crash was dropped from the end of a journal: it was never acknowledged',
    );
  }
  return { store, apiTokens };
}

/** Every service has done its part of the revision: generated, and distributed (on relay root). */
export async function settled(pipeline: EmbeddedPipeline, revision: number): Promise<boolean> {
  const generation = pipeline.generator.loop.status();
  if (generation.revision !== revision || generation.pending > 0 || generation.queued > 0) return false;
  // The generator's last bundles may still be on the bus, on their way to the distribution-service.
  if ((await pipeline.backlog()) > 0) return false;
  return pipeline.distribution.distributor.status().cursor > 0;
}
