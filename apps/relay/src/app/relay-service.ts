import 'reflect-metadata';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Module } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { ExpressAdapter } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import {
  BLOB_DIRECTORY,
  BlobCollector,
  BlobDirectory,
  CONFIRMATION_SINK,
  DiskHealth,
  FEED_LOG,
  FETCH_RECORDER,
  FeedController,
  FeedLog,
  FetchRecorder,
  KnownRelays,
  NODE_TREES,
  NodeTrees,
  NodesController,
  RELAY_DIRECTORY,
  subtreeAuthenticator,
} from '@policygen/distribution';
import type { ReadinessCheck } from '@policygen/service-kit';
import {
  ServiceShellModule,
  collectProcessMetrics,
  createServiceApp,
  stagingNameOf,
  writeFileDurably,
} from '@policygen/service-kit';
import { Follower } from '../relay/follower';
import { ParentClient } from '../relay/parent-client';

export interface RelayOptions {
  readonly relayId: string;
  /** The distribution-service, or the relay above this one. */
  readonly parentUrl: string;
  /** This relay's credential for its parent (`relay.<relayId>.<mac>`: relay-token.ts). */
  readonly relayToken: string;
  readonly dataDir: string;
  readonly logger: Logger;
  readonly pollWaitMs?: number;
  /** Bytes of small new blobs the parent may give with each feed page (the follower's default; 0: none). */
  readonly inlineBytes?: number;
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
  const disk = new DiskHealth(options.logger);
  // Durable: the cursor on disk never runs ahead of the entries (and their blobs) a power loss keeps.
  const log = await FeedLog.open(join(options.dataDir, 'feed.jsonl'), { durable: true, health: disk });
  const blobs = await BlobDirectory.open(join(options.dataDir, 'blobs'), { health: disk });
  // Versions before serving from the blobs kept hard-linked trees: nothing reads them any more.
  await rm(join(options.dataDir, 'trees'), { recursive: true, force: true });
  await rm(join(options.dataDir, 'nodes'), { recursive: true, force: true });
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectProcessMetrics(registry);
  disk.register(registry);
  const identity = { relayId: options.relayId, parentUrl: options.parentUrl };
  const relaysFile = join(options.dataDir, 'relays.json');
  disk.watch('relays', options.dataDir);
  disk.removeLeftover('relays', stagingNameOf(relaysFile));
  // Kept on disk: after a restart, the relays below authenticate before the parent answers again.
  const relays = await readKnownRelays(relaysFile, options.logger);
  let relaysUnsaved = false;
  const parent = new ParentClient(options.parentUrl, options.relayId, options.relayToken, registry);
  const follower = new Follower({
    relayId: options.relayId,
    parent,
    onSubtreeRelays: async (named) => {
      // Saved again after a failed save (a full disk), though nothing changed since.
      if (!relays.replace(named) && !relaysUnsaved) return;
      relaysUnsaved = true;
      try {
        writeFileDurably(relaysFile, JSON.stringify(relays.all()));
      } catch (error) {
        disk.writeFailed('relays', error);
        throw error;
      }
      disk.writeSucceeded('relays');
      relaysUnsaved = false;
      options.logger.info({ relays: named.length }, 'the relays below, as the parent names them, saved');
    },
    log,
    blobs,
    logger: options.logger,
    registry,
    ...(options.pollWaitMs === undefined ? {} : { pollWaitMs: options.pollWaitMs }),
    ...(options.inlineBytes === undefined ? {} : { inlineBytes: options.inlineBytes }),
  });

  const readiness: ReadinessCheck[] = [{ name: 'parent', check: () => follower.readiness() }, disk.readiness];

  @Module({
    imports: [
      ServiceShellModule.forRoot({
        service: 'relay',
        logger: options.logger,
        registry,
        readiness: () => readiness,
        status: () => ({ ...identity, ...follower.status() }),
        // The relays below by their credentials' digests, the nodes served by their keys: from the feed.
        authenticator: subtreeAuthenticator({ relayId: options.relayId, log, relays }),
      }),
    ],
    controllers: [NodesController, FeedController],
    providers: [
      { provide: CONFIRMATION_SINK, useValue: follower },
      { provide: FEED_LOG, useValue: log },
      { provide: BLOB_DIRECTORY, useValue: blobs },
      { provide: RELAY_DIRECTORY, useValue: relays },
      { provide: NODE_TREES, useValue: new NodeTrees(options.relayId, log, blobs) },
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
      parent.close();
      await collector.stop();
      await log.close();
      await app.close();
      blobs.close();
    },
  };
}

/**
 * The relays below as last saved; none when nothing was (a new relay, or one older than
 * credentials) or it cannot be read: the parent's next page names them again.
 */
async function readKnownRelays(file: string, logger: Logger): Promise<KnownRelays> {
  try {
    return KnownRelays.read(await readFile(file, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      logger.warn(
        { err: error, file },
        'the saved relays below cannot be read: waiting for the parent to name them',
      );
    return new KnownRelays();
  }
}
