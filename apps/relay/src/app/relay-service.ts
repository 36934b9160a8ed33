import 'reflect-metadata';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { Registry, collectDefaultMetrics } from 'prom-client';
import {
  BLOB_DIRECTORY,
  BlobCollector,
  BlobDirectory,
  CONFIRMATION_SINK,
  FEED_LOG,
  FeedController,
  FeedLog,
  METRICS_REGISTRY,
  MetricsController,
} from '@policygen/distribution';
import { Follower } from '../relay/follower';
import { ParentClient } from '../relay/parent-client';
import { HealthController } from './health.controller';
import { NodesController } from './nodes.controller';
import type { RelayIdentity } from './tokens';
import { FOLLOWER, RELAY_IDENTITY } from './tokens';

export interface RelayOptions {
  readonly relayId: string;
  /** The distribution-service, or the relay above this one. */
  readonly parentUrl: string;
  readonly dataDir: string;
  readonly logger: Logger;
  readonly pollWaitMs?: number;
  /** How long a blob no served bundle references is kept before it is deleted (default 10 min). */
  readonly blobGraceMs?: number;
  /** Process-wide metrics (default metrics) only once per process: the embedded mode runs several services. */
  readonly defaultMetrics?: boolean;
  /** The Express app to serve on (default: one of its own), e.g. mounted beside other services. */
  readonly httpAdapter?: ExpressAdapter;
}

export interface RelayService {
  readonly app: NestExpressApplication;
  readonly follower: Follower;
  stop(): Promise<void>;
}

/**
 * A relay as a NestJS app, initialised but not listening: it serves its nodes and the relays
 * below it from disk, and follows its parent in the background.
 */
export async function startRelay(options: RelayOptions): Promise<RelayService> {
  const log = await FeedLog.open(join(options.dataDir, 'feed.jsonl'));
  const blobs = await BlobDirectory.open(join(options.dataDir, 'blobs'));
  // Versions before serving from the blobs kept hard-linked trees: nothing reads them any more.
  await rm(join(options.dataDir, 'trees'), { recursive: true, force: true });
  await rm(join(options.dataDir, 'nodes'), { recursive: true, force: true });
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });
  const identity: RelayIdentity = { relayId: options.relayId, parentUrl: options.parentUrl };
  const follower = new Follower({
    relayId: options.relayId,
    parent: new ParentClient(options.parentUrl, options.relayId, registry),
    log,
    blobs,
    logger: options.logger,
    registry,
    ...(options.pollWaitMs === undefined ? {} : { pollWaitMs: options.pollWaitMs }),
  });

  @Module({
    controllers: [HealthController, NodesController, FeedController, MetricsController],
    providers: [
      { provide: FOLLOWER, useValue: follower },
      { provide: CONFIRMATION_SINK, useValue: follower },
      { provide: FEED_LOG, useValue: log },
      { provide: BLOB_DIRECTORY, useValue: blobs },
      { provide: RELAY_IDENTITY, useValue: identity },
      { provide: METRICS_REGISTRY, useValue: registry },
    ],
  })
  class RelayModule {}

  const app = await NestFactory.create<NestExpressApplication>(
    RelayModule,
    options.httpAdapter ?? new ExpressAdapter(),
    { logger: false, bodyParser: false },
  );
  app.useBodyParser('json', { limit: '64mb' });
  app.set('x-powered-by', false);
  await app.init();
  const collector = new BlobCollector({
    blobs,
    log,
    relayId: options.relayId,
    graceMs: options.blobGraceMs ?? 600_000,
    registry,
    logger: options.logger,
  });
  collector.start();
  follower.start();
  return {
    app,
    follower,
    async stop() {
      await follower.stop();
      await collector.stop();
      await log.close();
      await app.close();
      blobs.close();
    },
  };
}
