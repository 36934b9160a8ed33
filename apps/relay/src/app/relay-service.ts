import 'reflect-metadata';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Module } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { ExpressAdapter } from '@nestjs/platform-express';
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
} from '@policygen/distribution';
import type { ReadinessCheck } from '@policygen/service-kit';
import { ServiceShellModule, createServiceApp } from '@policygen/service-kit';
import { FetchRecorder } from '../relay/fetch-recorder';
import { Follower } from '../relay/follower';
import { ParentClient } from '../relay/parent-client';
import { NodesController } from './nodes.controller';
import type { RelayIdentity } from './tokens';
import { FETCH_RECORDER, RELAY_IDENTITY } from './tokens';

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
  /** What its `/health/ready` checks: the embedded mode's root readiness covers it too. */
  readonly readiness: readonly ReadinessCheck[];
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

  const readiness: ReadinessCheck[] = [{ name: 'parent', check: () => follower.readiness() }];

  @Module({
    imports: [
      ServiceShellModule.forRoot({
        service: 'relay',
        logger: options.logger,
        registry,
        readiness: () => readiness,
        status: () => ({ ...identity, ...follower.status() }),
      }),
    ],
    controllers: [NodesController, FeedController],
    providers: [
      { provide: CONFIRMATION_SINK, useValue: follower },
      { provide: FEED_LOG, useValue: log },
      { provide: BLOB_DIRECTORY, useValue: blobs },
      { provide: RELAY_IDENTITY, useValue: identity },
      { provide: FETCH_RECORDER, useValue: new FetchRecorder(options.relayId, registry, follower) },
    ],
  })
  class RelayModule {}

  const app = await createServiceApp(RelayModule, { httpAdapter: options.httpAdapter });
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
    readiness,
    async stop() {
      await follower.stop();
      await collector.stop();
      await log.close();
      await app.close();
      blobs.close();
    },
  };
}
