import fc from 'fast-check';
import { MemoryBundleCache } from '@policygen/cache';
import type { BundleEntry, NodeBundle } from '@policygen/engine';
import { GENERATED_AT_FILE, MANIFEST_FILE, sha256 } from '@policygen/engine';
import type { TopicMessages } from '@policygen/messaging';
import { MANIFEST_HEAD_PATH, MANIFEST_PROPERTIES_PATH } from '@policygen/sdk';
import { BundlePublisher } from './bundle-publisher';

const TOPICS = { nodeBundles: 'b', generationEvents: 'g', pipelineSummaries: 's' } as never;
const producer = {
  send: async () => undefined,
  sendAll: async () => undefined,
  close: async () => undefined,
};

const entry = (path: string, content: string, withContent: boolean): BundleEntry => ({
  path,
  sha256: sha256(content),
  bytes: Buffer.byteLength(content),
  ...(withContent ? { content } : {}),
});

/** A computed bundle: sorted files, the manifest among them, contents left out where the engine was told they are stored. */
const bundles = fc
  .record({
    files: fc.uniqueArray(
      fc.record({
        path: fc.stringMatching(/^rules\/[a-z]{1,6}\.cf$/),
        content: fc.string({ unit: 'grapheme', maxLength: 20 }),
        withContent: fc.boolean(),
      }),
      { selector: (file) => file.path, maxLength: 8 },
    ),
    parts: fc.option(fc.record({ head: fc.string(), properties: fc.string({ unit: 'grapheme' }) }), {
      nil: undefined,
    }),
    generatedAt: fc.string({ maxLength: 5 }),
    manifest: fc.string({ maxLength: 10 }),
  })
  .map(({ files, parts, generatedAt, manifest }) => {
    const all = [
      ...files.map((file) => entry(file.path, file.content, file.withContent)),
      entry(MANIFEST_FILE, manifest, true),
      entry(GENERATED_AT_FILE, generatedAt, true),
    ].sort((a, b) => (a.path < b.path ? -1 : 1));
    const bundle: NodeBundle<BundleEntry> = {
      nodeId: 'n1',
      status: 'ok',
      errors: [],
      files: all,
      manifest: null,
      ...(parts ? { manifestParts: parts } : {}),
      hash: `sha256:${sha256(all.map((file) => file.sha256).join())}`,
    };
    return bundle;
  });

describe('BundlePublisher.published', () => {
  it('lists what the event names and keeps as bytes exactly the contents the cache may lack', () => {
    fc.assert(
      fc.property(bundles, fc.boolean(), fc.array(fc.nat(7)), (bundle, keepAll, storedIndexes) => {
        const publisher = new BundlePublisher(new MemoryBundleCache(), producer, TOPICS);
        const parts = bundle.manifestParts;
        // What the event lists: the parts (as files), then the bundle's files but the manifest.
        const listed = [
          ...(parts
            ? [
                entry(MANIFEST_HEAD_PATH, parts.head, true),
                entry(MANIFEST_PROPERTIES_PATH, parts.properties, true),
              ]
            : []),
          ...bundle.files
            .filter((file) => file.path !== MANIFEST_FILE)
            .map((file) =>
              parts && file.path === GENERATED_AT_FILE ? { ...file, content: undefined } : file,
            ),
        ];
        // Some of the digests are known to be in the cache already.
        const stored = new Set(
          storedIndexes.map((index) => listed[index % Math.max(1, listed.length)]?.sha256),
        );
        for (const digest of stored)
          if (digest) (publisher as unknown as StoredNotes).storedBlobs.note(digest);

        const published = publisher.published(bundle, 1_000, keepAll);

        expect(JSON.parse(published.filesJson)).toEqual(
          listed.map((file) => ({ path: file.path, sha256: file.sha256 })),
        );
        expect(published.digests).toEqual(listed.map((file) => file.sha256));
        const manifest = bundle.files.find((file) => file.path === MANIFEST_FILE) as BundleEntry;
        expect(published.manifestSha256).toBe(manifest.sha256);
        // Without parts, the manifest travels as a file: its content is a blob to store.
        const carried = parts ? listed : [...listed, manifest];
        const expected = carried.filter(
          (file) => file.content !== undefined && (keepAll || !stored.has(file.sha256)),
        );
        const byDigest = (pairs: string[][]): string[][] =>
          pairs.sort((a, b) => (a.join() < b.join() ? -1 : 1));
        expect(byDigest(published.blobs.map((blob) => [blob.sha256, blob.content.toString('utf8')]))).toEqual(
          byDigest(expected.map((file) => [file.sha256, file.content as string])),
        );
        expect(published.reused + published.blobs.length).toBe(carried.length + (parts ? 1 : 0));
      }),
    );
  });
});

interface StoredNotes {
  readonly storedBlobs: { note(digest: string): void };
}

describe('BundlePublisher.publish', () => {
  const stamp = { revision: 2, committedAt: '2026-12-01T00:00:00.000Z' };
  const noMaterialising = (): never => {
    throw new Error('every outcome here was computed with its bundle');
  };

  /** Outcomes the engine computed, each with its bundle, for nodes n0, n1, … */
  const outcomesOf = (publisher: BundlePublisher, computed: readonly NodeBundle<BundleEntry>[]) =>
    computed.map((bundle, index) => {
      const nodeId = `n${index}`;
      const published = publisher.published({ ...bundle, nodeId }, 1_000, true);
      return {
        nodeId,
        skipped: false,
        result: { nodeId, status: 'ok' as const, errors: [], hash: bundle.hash, inputsKey: '', policies: 0 },
        bundle: published,
        durationMs: 1,
        generatedAt: 1_000,
        forced: false,
      };
    });

  it('puts the computed contents in the round trip that reads the hashes the cache holds', async () => {
    const cache = new MemoryBundleCache();
    let putBlobs = false;
    let answeredFirst: 'hashes' | 'blobs' | undefined;
    const gated = Object.assign(Object.create(cache) as MemoryBundleCache, {
      // The hashes come back only once the contents went out too, or after a second without them.
      nodeHashes: async (nodeIds: readonly string[]) => {
        for (let waited = 0; !putBlobs && waited < 1_000; waited += 10)
          await new Promise((resolve) => setTimeout(resolve, 10));
        answeredFirst ??= 'hashes';
        return cache.nodeHashes(nodeIds);
      },
      putBlobs: async (blobs: Parameters<MemoryBundleCache['putBlobs']>[0]) => {
        putBlobs = true;
        const stored = await cache.putBlobs(blobs);
        answeredFirst ??= 'blobs';
        return stored;
      },
    });
    const publisher = new BundlePublisher(gated, producer, TOPICS);
    const [bundle] = fc.sample(bundles, { numRuns: 1, seed: 7 }) as [NodeBundle<BundleEntry>];

    const summary = await publisher.publish(outcomesOf(publisher, [bundle]), stamp, noMaterialising);

    expect(summary.generated).toBe(1);
    // Issued together: the hashes did not have to be answered before the contents went out.
    expect(answeredFirst).toBe('blobs');
  });

  it('has every content an event names in the cache before the event is sent, held hashes or not', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(bundles, { minLength: 1, maxLength: 4 }),
        fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
        async (computed, heldAlready) => {
          const cache = new MemoryBundleCache();
          const missingAtSend: string[] = [];
          const sent: string[] = [];
          const checking = {
            ...producer,
            sendAll: async (parts: readonly TopicMessages[]) => {
              for (const message of parts.find((part) => part.topic === 'b')?.messages ?? []) {
                const outcome = outcomes.find((candidate) => candidate.nodeId === message.key);
                sent.push(message.key as string);
                for (const blob of outcome?.bundle.blobs ?? [])
                  if ((await cache.getBlob(blob.sha256)) === null) missingAtSend.push(blob.sha256);
              }
            },
          };
          const publisher = new BundlePublisher(cache, checking, TOPICS);
          const outcomes = outcomesOf(publisher, computed);
          // Some nodes' bundles the cache records already: they are not sent again.
          const recorded = outcomes.filter((_, index) => heldAlready[index]);
          await cache.recordBundles(
            recorded.map(({ nodeId, bundle }) => ({
              nodeId,
              revision: 1,
              hash: bundle.hash,
              committedAt: stamp.committedAt,
              digests: bundle.digests,
              manifestSha256: bundle.manifestSha256,
            })),
          );

          await publisher.publish(outcomes, stamp, noMaterialising);

          expect(missingAtSend).toEqual([]);
          expect(sent.sort()).toEqual(
            outcomes
              .filter((_, index) => !heldAlready[index])
              .map((outcome) => outcome.nodeId)
              .sort(),
          );
        },
      ),
      { numRuns: 50 },
    );
  });
});
