import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Module } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import pino from 'pino';
import { Registry } from 'prom-client';
import { extract } from 'tar-stream';
import type { Confirmation, FeedEntry } from '@policygen/distribution';
import {
  BLOB_DIRECTORY,
  BlobDirectory,
  CONFIRMATION_SINK,
  FEED_LOG,
  FeedController,
  FeedLog,
  RELAY_DIRECTORY,
  RelayTopology,
  TopologyRelayDirectory,
  deploymentAuthenticator,
  issueNodeToken,
  issueRelayToken,
  nodeKey,
} from '@policygen/distribution';
import { ServiceShellModule } from '@policygen/service-kit';
import type { RelayService } from '../app/relay-service';

export const TEST_SECRET = 'a-secret-long-enough-for-tokens';
export const AT = '2026-11-24T10:00:00.000Z';
export const PROMISES_GENERATED = 'rules/cfengine-community/rudder-promises-generated';
export const digestOf = (content: string): string => createHash('sha256').update(content).digest('hex');

/** A relay's credential, as the config API issues it. */
export const relayToken = (relayId: string): string => issueRelayToken(TEST_SECRET, relayId);

/** A node's token, valid for a day unless told otherwise. */
export const nodeToken = (nodeId: string, expiresAt = new Date(Date.now() + 86_400_000)): string =>
  issueNodeToken(TEST_SECRET, nodeId, expiresAt);

export const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

export function files(node: number, version: number): { path: string; content: string }[] {
  return [
    { path: 'policy-manifest.json', content: `{"node":${node},"version":${version}}\n` },
    { path: PROMISES_GENERATED, content: `${1_700_000_000_000 + node * 10 + version}\n` },
    { path: 'rules/cfengine-community/promises.cf', content: `promises of ${node} v${version}\n` },
    { path: 'rules/cfengine-community/shared-a.cf', content: `shared a ${node % 2}\n` },
    { path: 'rules/cfengine-community/shared-b.cf', content: 'shared b\n' },
  ];
}

/** What the test root does with confirmations: keeps them, or refuses a batch as the test says. */
export type ConfirmationHandler = (batch: readonly Confirmation[]) => Promise<void>;

/**
 * A root of its own, as the distribution-service is to the relays: a feed and blobs served over
 * HTTP by the real FeedController, behind the real credential guard, with the relay tree `relays`.
 */
export class TestRoot {
  readonly confirmations: Confirmation[][] = [];
  /** Called before a batch is kept: a test makes it throw to refuse one. */
  onConfirmations: ConfirmationHandler = async () => undefined;
  private seq = 0;
  private constructor(
    readonly log: FeedLog,
    readonly blobs: BlobDirectory,
    readonly app: INestApplication,
    readonly url: string,
  ) {}

  static async start(
    directory: string,
    relays: readonly { id: string; policyServer: string }[] = [{ id: 'eu', policyServer: 'root' }],
  ): Promise<TestRoot> {
    const log = await FeedLog.open(join(directory, 'feed.jsonl'));
    const blobs = await BlobDirectory.open(join(directory, 'blobs'));
    const topology = RelayTopology.of({ nodes: [], relays });
    const sink = {
      confirm: async (batch: Confirmation[]): Promise<void> => {
        await root.onConfirmations(batch);
        root.confirmations.push(batch);
      },
    };
    @Module({
      imports: [
        ServiceShellModule.forRoot({
          service: 'test-root',
          logger: pino({ level: 'silent' }),
          registry: new Registry(),
          readiness: () => [],
          status: () => ({}),
          authenticator: deploymentAuthenticator(TEST_SECRET),
        }),
      ],
      controllers: [FeedController],
      providers: [
        { provide: FEED_LOG, useValue: log },
        { provide: BLOB_DIRECTORY, useValue: blobs },
        { provide: CONFIRMATION_SINK, useValue: sink },
        { provide: RELAY_DIRECTORY, useValue: new TopologyRelayDirectory(TEST_SECRET, () => topology) },
      ],
    })
    class RootModule {}
    const app = await NestFactory.create<NestExpressApplication>(RootModule, {
      logger: false,
      bodyParser: false,
    });
    app.useBodyParser('json', { limit: '64mb' });
    await app.listen(0, '127.0.0.1');
    const root: TestRoot = new TestRoot(log, blobs, app, await app.getUrl());
    return root;
  }

  /** Bundles for nodes (at a version), on a path, with `extra` files: their blobs first, then one entry each. */
  async publish(
    nodes: readonly number[],
    version: number,
    path = ['root', 'eu'],
    previousPath: string[] = [],
    extra: readonly { path: string; content: string }[] = [],
  ): Promise<void> {
    const entries: FeedEntry[] = [];
    for (const node of nodes) {
      const contents = [...files(node, version), ...extra];
      await this.blobs.writeMany(contents.map(({ content }) => ({ sha256: digestOf(content), content })));
      this.seq++;
      entries.push({
        seq: this.seq,
        nodeId: `node-${node}`,
        path,
        previousPath,
        revision: version,
        bundle: {
          hash: `sha256:${digestOf(`${node}/${version}`)}`,
          revision: version,
          committedAt: AT,
          generatedAt: AT,
          distributedAt: AT,
          files: contents.map(({ path: file, content }) => ({ path: file, sha256: digestOf(content) })),
          nodeKey: nodeKey(TEST_SECRET, `node-${node}`),
        },
      });
    }
    await this.log.append(entries);
  }

  async stop(): Promise<void> {
    await this.log.close();
    await this.app.close();
  }
}

/** `GET /nodes/{id}/policies` as the node does it, the tar unpacked. */
export async function fetchBundle(
  relay: RelayService,
  node: number,
  token = nodeToken(`node-${node}`),
): Promise<{ status: number; files: Map<string, string> }> {
  const url = await relay.app.getUrl();
  const response = await fetch(`${url}/nodes/node-${node}/policies`, { headers: bearer(token) });
  const unpacked = new Map<string, string>();
  if (response.status !== 200) return { status: response.status, files: unpacked };
  const unpack = extract();
  const done = (async () => {
    for await (const entry of unpack) {
      const chunks: Buffer[] = [];
      for await (const chunk of entry) chunks.push(chunk as Buffer);
      unpacked.set(entry.header.name, Buffer.concat(chunks).toString());
    }
  })();
  unpack.end(Buffer.from(await response.arrayBuffer()));
  await done;
  return { status: 200, files: unpacked };
}

/** One sample of a relay's metric (0 when absent). */
export async function metricOf(relay: RelayService, line: string): Promise<number> {
  const text = await (await fetch(`${await relay.app.getUrl()}/metrics`)).text();
  const found = text.split('\n').find((candidate) => candidate.startsWith(`${line} `));
  return Number(found?.split(' ')[1] ?? 0);
}
