import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { Blob, Confirmation, FeedEntry } from '@policygen/distribution';
import { BlobDirectory, FeedLog, entryFor } from '@policygen/distribution';
import { eventually } from '@policygen/testing-infra';
import type { Parent } from './follower';
import { Follower } from './follower';
import type { ReadFeedPage } from './parent-client';
import { MissingBlobsError, RefusedByParentError } from './parent-client';

const AT = '2026-11-24T10:00:00.000Z';
const digestOf = (content: string): string => createHash('sha256').update(content).digest('hex');
const contentsOf = (node: number, version: number): string[] => [
  `manifest of ${node} v${version}`,
  `promises of ${node} v${version}`,
  `shared ${version % 2}`,
];

/**
 * A parent as the FeedController serves one (its feed by relay, long-polled; blobs only of the
 * subtree's latest bundles, else a 404 naming them), on real files, without HTTP in between.
 */
class FileParent implements Parent {
  readonly url = 'file-parent';
  readonly confirmations: Confirmation[] = [];
  /** Confirmation requests of their own (`confirm`), apart from those a page request carries. */
  confirmRequests = 0;
  /** Refuses (400) this many page requests that carry confirmations, as a parent refuses bad ones. */
  refuseConfirming = 0;
  /** Blobs it answers as missing (collected, lost). */
  readonly lost = new Set<string>();
  private constructor(
    readonly log: FeedLog,
    readonly blobStore: BlobDirectory,
  ) {}

  static async open(directory: string): Promise<FileParent> {
    return new FileParent(
      await FeedLog.open(join(directory, 'feed.jsonl')),
      await BlobDirectory.open(join(directory, 'blobs')),
    );
  }

  async publish(node: number, version: number, relay: string | null): Promise<void> {
    const contents = contentsOf(node, version);
    await this.blobStore.writeMany(contents.map((content) => ({ sha256: digestOf(content), content })));
    const previous = this.log.latest(`node-${node}`);
    const entry: FeedEntry = {
      seq: this.log.cursor + 1,
      nodeId: `node-${node}`,
      path: relay === null ? [] : ['root', relay],
      previousPath: previous?.path ?? [],
      revision: version,
      bundle:
        relay === null
          ? null
          : {
              hash: `sha256:${digestOf(contents.join('\n'))}`,
              revision: version,
              committedAt: AT,
              generatedAt: AT,
              distributedAt: AT,
              files: contents.map((content, index) => ({ path: `f${index}`, sha256: digestOf(content) })),
              nodeKey: null,
            },
    };
    await this.log.append([entry]);
  }

  /** Gives about half the blobs of each page with it (those asked for with `inlineBytes`), the rest by request. */
  inline = false;
  /** Gives these blobs with a page with contents that do not have their digest. */
  readonly corrupt = new Set<string>();

  async feed(
    after: number,
    waitMs: number,
    limit: number,
    signal?: AbortSignal,
    inlineBytes = 0,
    confirmations: readonly Confirmation[] = [],
  ): Promise<ReadFeedPage> {
    if (confirmations.length > 0 && this.refuseConfirming > 0) {
      this.refuseConfirming--;
      throw new RefusedByParentError(400, 'invalid confirmations');
    }
    // Taken before the page is waited for, as the parent's POST of a page does.
    this.confirmations.push(...confirmations);
    let slice = this.log.after(after, 'eu', limit);
    if (slice.entries.length === 0 && waitMs > 0) {
      await Promise.race([
        this.log.waitForAppend(waitMs),
        new Promise((_, reject) => signal?.addEventListener('abort', () => reject(new Error('aborted')))),
      ]);
      slice = this.log.after(after, 'eu', limit);
    }
    const blobs: Record<string, string> = {};
    if (this.inline && inlineBytes > 0)
      for (const entry of slice.entries)
        for (const file of entryFor(entry, 'eu') === 'keep' ? (entry.bundle?.files ?? []) : [])
          if (file.sha256 < '8' && !this.lost.has(file.sha256) && this.blobStore.has(file.sha256))
            blobs[file.sha256] = this.corrupt.has(file.sha256)
              ? Buffer.from('not this blob').toString('base64')
              : this.blobStore.readNow(file.sha256).toString('base64');
    return {
      entries: [...slice.entries],
      next: slice.next,
      head: { seq: this.log.cursor, revision: this.log.latestRevision },
      refused: [],
      ...(Object.keys(blobs).length > 0 ? { blobs } : {}),
    };
  }

  async blobs(digests: readonly string[]): Promise<Blob[]> {
    const missing = digests.filter(
      (digest) =>
        this.lost.has(digest) || !this.log.referencedBelow(digest, 'eu') || !this.blobStore.has(digest),
    );
    if (missing.length > 0) throw new MissingBlobsError(missing, `${missing.length} not here`);
    return digests.map((sha256) => ({ sha256, content: this.blobStore.readNow(sha256) }));
  }

  async confirm(confirmations: readonly Confirmation[]): Promise<void> {
    this.confirmRequests++;
    this.confirmations.push(...confirmations);
  }

  async close(): Promise<void> {
    await this.log.close();
    this.blobStore.close();
  }
}

interface RelayFiles {
  readonly log: FeedLog;
  readonly blobs: BlobDirectory;
  readonly follower: Follower;
  stop(): Promise<void>;
}

async function followerOf(parent: Parent, directory: string, pageSize: number): Promise<RelayFiles> {
  const log = await FeedLog.open(join(directory, 'feed.jsonl'), { durable: true });
  const blobs = await BlobDirectory.open(join(directory, 'blobs'));
  const follower = new Follower({
    relayId: 'eu',
    parent,
    log,
    blobs,
    logger: pino({ level: 'silent' }),
    registry: new Registry(),
    pollWaitMs: 1_000,
    pageSize,
    blobBatch: 2,
  });
  follower.start();
  return {
    log,
    blobs,
    follower,
    async stop() {
      await follower.stop();
      await log.close();
      blobs.close();
    },
  };
}

/** The relay serves exactly the parent's bundles of its subtree, each file readable with its content. */
async function expectSameState(parent: FileParent, relay: RelayFiles): Promise<void> {
  for (const entry of parent.log.latestEntries()) {
    const held = relay.log.latest(entry.nodeId);
    if (entryFor(entry, 'eu') !== 'keep') {
      expect({ node: entry.nodeId, kept: held ? entryFor(held, 'eu') === 'keep' : false }).toEqual({
        node: entry.nodeId,
        kept: false,
      });
      continue;
    }
    expect({ node: entry.nodeId, hash: held?.bundle?.hash }).toEqual({
      node: entry.nodeId,
      hash: entry.bundle?.hash,
    });
    for (const file of entry.bundle?.files ?? [])
      expect(digestOf((await relay.blobs.read(file.sha256)).toString())).toBe(file.sha256);
  }
}

describe('Follower: a relay applying its parent feed', () => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-follower-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it('ends equal to the parent feed after any sequence of changes, moves and removals, in pages of any size, with blobs given with pages or not, across restarts', async () => {
    const change = fc.record({
      node: fc.integer({ min: 1, max: 6 }),
      relay: fc.constantFrom('eu', 'eu', 'us', null),
      restartAfter: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(change, { minLength: 1, maxLength: 25 }),
        fc.integer({ min: 1, max: 4 }),
        fc.boolean(),
        async (changes, pageSize, inline) => {
          const at = mkdtempSync(join(directory, 'case-'));
          const parent = await FileParent.open(join(at, 'parent'));
          parent.inline = inline;
          let relay = await followerOf(parent, join(at, 'relay'), pageSize);
          try {
            for (const [version, { node, relay: on, restartAfter }] of changes.entries()) {
              await parent.publish(node, version + 1, on);
              if (restartAfter) {
                await relay.stop();
                relay = await followerOf(parent, join(at, 'relay'), pageSize);
              }
            }
            const current = relay;
            await eventually(() => current.log.cursor >= parent.log.cursor, {
              what: 'the relay at the parent cursor',
            });
            await expectSameState(parent, current);
            const kept = [...parent.log.latestEntries()].filter((entry) => entryFor(entry, 'eu') === 'keep');
            const unconfirmed = (): string[] =>
              kept
                .filter(
                  (entry) =>
                    !parent.confirmations.some(
                      (c) => c.nodeId === entry.nodeId && c.hash === entry.bundle?.hash,
                    ),
                )
                .map((entry) => entry.nodeId);
            // The last page's ride on the next page request, which follows at once.
            await eventually(() => unconfirmed().length === 0, { what: 'every kept bundle confirmed' });
            expect(unconfirmed()).toEqual([]);
          } finally {
            await relay.stop();
            await parent.close();
          }
        },
      ),
      { numRuns: 30 },
    );
  });

  it('leaves out a node whose files the parent lost, keeping its bundle, and takes its next bundle', async () => {
    const parent = await FileParent.open(join(directory, 'parent'));
    await parent.publish(1, 1, 'eu');
    const relay = await followerOf(parent, join(directory, 'relay'), 10);
    await eventually(() => relay.log.cursor >= parent.log.cursor, { what: 'synced' });
    parent.lost.add(digestOf(contentsOf(1, 2)[1] ?? ''));
    await parent.publish(1, 2, 'eu');
    await parent.publish(2, 2, 'eu');
    await eventually(() => relay.log.cursor >= parent.log.cursor, {
      what: 'past the entry it cannot complete',
    });
    expect(relay.log.latest('node-1')?.revision).toBe(1);
    expect(relay.log.latest('node-2')?.revision).toBe(2);
    await parent.publish(1, 3, 'eu');
    await eventually(() => relay.log.latest('node-1')?.revision === 3, { what: 'node 1 brought forward' });
    await relay.stop();
    await parent.close();
  });

  it('confirms a page with the request for the next one, not with a request of its own', async () => {
    const parent = await FileParent.open(join(directory, 'parent'));
    const relay = await followerOf(parent, join(directory, 'relay'), 10);
    for (let version = 1; version <= 3; version++) {
      await parent.publish(1, version, 'eu');
      await eventually(
        () => parent.confirmations.some((c) => c.nodeId === 'node-1' && c.revision === version),
        { what: `version ${version} confirmed` },
      );
    }
    expect(parent.confirmRequests).toBe(0);
    await relay.stop();
    await parent.close();
  });

  it('lets go of confirmations the parent refuses with a page request, and asks for the page again without them', async () => {
    const parent = await FileParent.open(join(directory, 'parent'));
    const relay = await followerOf(parent, join(directory, 'relay'), 10);
    parent.refuseConfirming = 1;
    await parent.publish(1, 1, 'eu');
    await eventually(() => relay.log.latest('node-1')?.revision === 1, { what: 'version 1 applied' });
    await parent.publish(1, 2, 'eu');
    await eventually(() => relay.log.latest('node-1')?.revision === 2, { what: 'version 2 applied' });
    await eventually(() => parent.confirmations.some((c) => c.revision === 2), {
      what: 'version 2 confirmed',
    });
    expect(parent.confirmations.map((c) => c.revision)).toEqual([2]);
    await relay.stop();
    await parent.close();
  });

  it('asks for a blob given with a page that does not have its digest, and goes on', async () => {
    const parent = await FileParent.open(join(directory, 'parent'));
    parent.inline = true;
    for (const content of contentsOf(1, 1)) parent.corrupt.add(digestOf(content));
    await parent.publish(1, 1, 'eu');
    const relay = await followerOf(parent, join(directory, 'relay'), 10);
    await eventually(() => relay.log.cursor >= parent.log.cursor, { what: 'synced' });
    await expectSameState(parent, relay);
    await relay.stop();
    await parent.close();
  });

  it('fetches again at start the blobs that opening dropped as torn', async () => {
    const parent = await FileParent.open(join(directory, 'parent'));
    await parent.publish(1, 1, 'eu');
    const first = await followerOf(parent, join(directory, 'relay'), 10);
    await eventually(() => first.log.cursor >= parent.log.cursor, { what: 'synced' });
    await first.stop();
    // A power loss tore the end of the pack: the last blob's bytes are gone.
    const { truncateSync, statSync } = await import('node:fs');
    const pack = join(directory, 'relay', 'blobs', 'packs', '000001.pack');
    truncateSync(pack, statSync(pack).size - 4);
    const relay = await followerOf(parent, join(directory, 'relay'), 10);
    expect(relay.blobs.droppedAtOpening).toBe(true);
    await eventually(
      () => (relay.log.latest('node-1')?.bundle?.files ?? []).every((file) => relay.blobs.has(file.sha256)),
      { what: 'the dropped blob fetched again' },
    );
    await expectSameState(parent, relay);
    await relay.stop();
    await parent.close();
  });
  it('fetches a blob that opening dropped and the parent lacked then, when a later entry names it unchanged', async () => {
    const parent = await FileParent.open(join(directory, 'parent'));
    await parent.publish(1, 1, 'eu');
    const first = await followerOf(parent, join(directory, 'relay'), 10);
    await eventually(() => first.log.cursor >= parent.log.cursor, { what: 'synced' });
    await first.stop();
    // Every blob torn away, and the parent lacking them while the relay starts again.
    const { truncateSync } = await import('node:fs');
    truncateSync(join(directory, 'relay', 'blobs', 'packs', '000001.pack'), 0);
    for (const content of contentsOf(1, 1)) parent.lost.add(digestOf(content));
    const relay = await followerOf(parent, join(directory, 'relay'), 10);
    await eventually(() => relay.follower.status().lastSyncAt !== null, {
      what: 'the relay following again',
    });
    parent.lost.clear();
    // Version 3 changes the node's manifest and promises; its shared file is version 1's.
    await parent.publish(1, 3, 'eu');
    await eventually(() => relay.log.latest('node-1')?.revision === 3, { what: 'node 1 at version 3' });
    await expectSameState(parent, relay);
    await relay.stop();
    await parent.close();
  });
});
