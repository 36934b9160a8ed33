import fc from 'fast-check';
import { MemoryBundleCache } from '@policygen/cache';
import type { BundleEntry, NodeBundle } from '@policygen/engine';
import { GENERATED_AT_FILE, MANIFEST_FILE, sha256 } from '@policygen/engine';
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
