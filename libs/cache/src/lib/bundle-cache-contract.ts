/// <reference types="jest" />
import fc from 'fast-check';
import type { BundleCache, NodeBundleRecord, NodeHashEntry } from './bundle-cache';

/**
 * What every bundle cache does, as jest tests: run by each adapter's spec (Redis, in memory)
 * against its own cache, so that they provably behave alike. Test-only: not exported by the library.
 */

/** A cache of one test's own, empty, and a way to lose everything it holds. */
export interface BundleCacheFixture {
  readonly cache: BundleCache;
  /** Empties what the cache is kept in, as a flushed (or restarted) Redis would be. */
  flush(): Promise<void>;
  /** Closes the cache and drops what it holds. */
  dispose(): Promise<void>;
}

function record(nodeId: string, revision: number, hash: string): NodeBundleRecord {
  return {
    nodeId,
    revision,
    hash: `sha256:${hash.repeat(64).slice(0, 64)}`,
    committedAt: '2026-11-21T00:00:00.000Z',
    digests: ['a'.repeat(64)],
    manifestSha256: hash.repeat(64).slice(0, 64),
  };
}

export function describeBundleCacheContract(
  name: string,
  newFixture: () => Promise<BundleCacheFixture>,
): void {
  describe(name, () => {
    let fixture: BundleCacheFixture;
    let cache: BundleCache;

    beforeEach(async () => {
      fixture = await newFixture();
      cache = fixture.cache;
    });
    afterEach(async () => {
      await fixture.dispose();
    });

    it('stores a blob once, however many times it is put', async () => {
      const blob = { sha256: 'b'.repeat(64), content: 'bundle common x {}' };
      expect(await cache.putBlobs([blob, { sha256: 'c'.repeat(64), content: 'other' }])).toBe(2);
      expect(await cache.putBlobs([blob, { ...blob, content: 'never overwritten' }])).toBe(0);
      expect(await cache.getBlob(blob.sha256)).toBe('bundle common x {}');
      expect(await cache.getBlob('d'.repeat(64))).toBeNull();
      expect(text(await cache.getBlobs(['c'.repeat(64), 'd'.repeat(64), blob.sha256]))).toEqual([
        'other',
        null,
        'bundle common x {}',
      ]);
      expect(text(await cache.getBlobs([]))).toEqual([]);
      const unicode = { sha256: 'e'.repeat(64), content: 'übung — 🙂\n' };
      expect(await cache.putBlobs([unicode, unicode])).toBe(1);
      expect(await cache.getBlob(unicode.sha256)).toBe(unicode.content);
    });

    it('stores a blob given as its UTF-8 bytes as the same text', async () => {
      const content = 'bundle bytes — ü 🙂\n';
      const blob = { sha256: 'f'.repeat(64), content: Buffer.from(content) };
      expect(await cache.putBlobs([blob])).toBe(1);
      expect(await cache.getBlob(blob.sha256)).toBe(content);
      expect(text(await cache.getBlobs([blob.sha256]))).toEqual([content]);
    });

    it("keeps a record's digests in their order, one twice when two files hold the same content", async () => {
      const given = { ...record('n1', 3, '5'), digests: ['b'.repeat(64), 'a'.repeat(64), 'b'.repeat(64)] };
      expect(await cache.recordBundles([given])).toEqual([true]);
      expect(await cache.nodeBundle('n1')).toEqual(given);
    });

    it('refuses a batch naming a digest that is not one, writing none of it', async () => {
      await expect(
        cache.recordBundles([record('n1', 1, '1'), { ...record('n2', 1, '2'), digests: ['abc'] }]),
      ).rejects.toThrow('node n2: a digest of 3 characters, not 64');
      expect(await cache.nodeHashes()).toEqual(new Map());
    });

    it('records a large batch, each answer in its place', async () => {
      const first = Array.from({ length: 250 }, (_, index) => record(`n${index}`, 5, String(index % 10)));
      expect(await cache.recordBundles(first)).toEqual(first.map(() => true));
      // Every seventh is older than what is held: refused, wherever it falls in the batch.
      const second = first.map((held, index) => record(held.nodeId, index % 7 === 0 ? 4 : 6, '9'));
      expect(await cache.recordBundles(second)).toEqual(second.map((_, index) => index % 7 !== 0));
      const hashes = await cache.nodeHashes();
      expect(hashes.size).toBe(250);
      expect(hashes.get('n7')).toEqual({ revision: 5, hash: first[7]?.hash });
      expect(hashes.get('n8')).toEqual({ revision: 6, hash: second[8]?.hash });
      expect(await cache.nodeBundle('n249')).toEqual(second[249]);
    });

    it('records bundles forward only, and removals leave a tombstone that older writes cannot undo', async () => {
      expect(await cache.recordBundles([record('n1', 3, '1'), record('n2', 3, '2')])).toEqual([true, true]);
      expect(await cache.recordBundles([record('n1', 2, '9')])).toEqual([false]);
      expect(await cache.recordBundles([record('n1', 3, '4')])).toEqual([true]);
      expect(await cache.nodeBundle('n1')).toEqual(record('n1', 3, '4'));
      expect([...(await cache.nodeHashes())].sort()).toEqual([
        ['n1', { revision: 3, hash: record('n1', 3, '4').hash }],
        ['n2', { revision: 3, hash: record('n2', 3, '2').hash }],
      ]);

      expect(await cache.removeNodes([{ nodeId: 'n2', revision: 2 }])).toEqual([false]);
      expect(await cache.removeNodes([{ nodeId: 'n2', revision: 5 }])).toEqual([true]);
      expect(await cache.nodeBundle('n2')).toBeNull();
      expect(await cache.recordBundles([record('n2', 4, '7')])).toEqual([false]);
      expect([...(await cache.nodeHashes()).keys()]).toEqual(['n1']);
      expect([...(await cache.nodeHashes(['n2', 'n1', 'n9']))]).toEqual([
        ['n1', { revision: 3, hash: record('n1', 3, '4').hash }],
      ]);
      expect(await cache.recordBundles([record('n2', 6, '8')])).toEqual([true]);
      expect((await cache.nodeBundle('n2'))?.hash).toBe(record('n2', 6, '8').hash);
    });

    it('answers empty requests with nothing, and an unknown node with nothing', async () => {
      expect(await cache.putBlobs([])).toBe(0);
      expect(await cache.recordBundles([])).toEqual([]);
      expect(await cache.removeNodes([])).toEqual([]);
      expect(await cache.nodeHashes([])).toEqual(new Map());
      expect(await cache.nodeHashes()).toEqual(new Map());
      expect(await cache.nodeBundle('nowhere')).toBeNull();
      // Removing a node never served still leaves its tombstone.
      expect(await cache.removeNodes([{ nodeId: 'nowhere', revision: 4 }])).toEqual([true]);
      expect(await cache.recordBundles([record('nowhere', 3, '1')])).toEqual([false]);
    });

    it('keeps, whatever the order of writes, the newest of them (the last, among equals)', async () => {
      type Write =
        | { kind: 'record'; node: number; revision: number; hash: string }
        | { kind: 'remove'; node: number; revision: number };
      const write = fc.oneof(
        fc.record({
          kind: fc.constant('record' as const),
          node: fc.nat(3),
          revision: fc.integer({ min: 1, max: 6 }),
          hash: fc.constantFrom('1', '2', '3'),
        }),
        fc.record({
          kind: fc.constant('remove' as const),
          node: fc.nat(3),
          revision: fc.integer({ min: 1, max: 6 }),
        }),
      );
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(write, { maxLength: 12 }), async (writes: Write[]) => {
          run++;
          const nodeId = (node: number): string => `run${run}-n${node}`;
          const model = new Map<string, { revision: number; hash: string | null }>();
          for (const each of writes) {
            const held = model.get(nodeId(each.node));
            const accepted = !held || held.revision <= each.revision;
            const outcome =
              each.kind === 'record'
                ? await cache.recordBundles([record(nodeId(each.node), each.revision, each.hash)])
                : await cache.removeNodes([{ nodeId: nodeId(each.node), revision: each.revision }]);
            expect(outcome).toEqual([accepted]);
            if (accepted)
              model.set(nodeId(each.node), {
                revision: each.revision,
                hash: each.kind === 'record' ? record('', 0, each.hash).hash : null,
              });
          }
          const ids = [0, 1, 2, 3].map(nodeId);
          const expected = new Map<string, NodeHashEntry>();
          for (const id of ids) {
            const held = model.get(id);
            if (held?.hash) expected.set(id, { revision: held.revision, hash: held.hash });
          }
          expect(await cache.nodeHashes(ids)).toEqual(expected);
          for (const id of ids)
            expect((await cache.nodeBundle(id))?.hash ?? null).toBe(expected.get(id)?.hash ?? null);
        }),
        { numRuns: 40 },
      );
    });

    it('collects the blobs no record names once their grace has passed, and only those', async () => {
      const digest = (letter: string): string => letter.repeat(64);
      const bundle = (
        nodeId: string,
        revision: number,
        files: string[],
        manifest: string,
      ): NodeBundleRecord => ({
        ...record(nodeId, revision, '1'),
        digests: files.map(digest),
        manifestSha256: digest(manifest),
      });
      const later = (): number => Date.now() + 60_000;
      await cache.putBlobs(
        ['a', 'b', 'c', 'm', 'n', 'x'].map((letter) => ({ sha256: digest(letter), content: letter })),
      );
      // Within the grace period, nothing goes, named or not.
      expect(await cache.collectBlobs({ unreferencedBefore: Date.now() - 60_000 })).toBe(0);
      await cache.recordBundles([bundle('n1', 1, ['a', 'b'], 'm'), bundle('n2', 1, ['b', 'c'], 'n')]);
      // `x` was put and never named.
      expect(await cache.collectBlobs({ unreferencedBefore: later() })).toBe(1);
      expect(await cache.getBlob(digest('x'))).toBeNull();
      // n1 moves on: `a` and `m` are named no more; `b` still is, by n2.
      await cache.putBlobs([{ sha256: digest('o'), content: 'o' }]);
      await cache.recordBundles([bundle('n1', 2, ['b'], 'o')]);
      expect(await cache.collectBlobs({ unreferencedBefore: later() })).toBe(2);
      expect(text(await cache.getBlobs(['a', 'm', 'b', 'o', 'c', 'n'].map(digest)))).toEqual([
        null,
        null,
        'b',
        'o',
        'c',
        'n',
      ]);
      // A stale record does not name anything, and a removal lets go of what the node named.
      await cache.recordBundles([bundle('n1', 1, ['c'], 'x')]);
      await cache.removeNodes([{ nodeId: 'n2', revision: 3 }]);
      // Put again (a generator about to name it): it stays its grace period.
      await cache.putBlobs([{ sha256: digest('n'), content: 'n' }]);
      expect(await cache.collectBlobs({ unreferencedBefore: Date.now() - 60_000 })).toBe(0);
      expect(await cache.collectBlobs({ unreferencedBefore: later(), limit: 1 })).toBe(1);
      expect(await cache.collectBlobs({ unreferencedBefore: later() })).toBe(1);
      expect(text(await cache.getBlobs(['b', 'c', 'n', 'o'].map(digest)))).toEqual(['b', null, null, 'o']);
      expect(await cache.collectBlobs({ unreferencedBefore: later() })).toBe(0);
    });

    it('says the cache is fresh once, until it is flushed', async () => {
      await expect(cache.ping()).resolves.toBeUndefined();
      expect(await cache.claimFreshness()).toBe(true);
      expect(await cache.claimFreshness()).toBe(false);
      await cache.recordBundles([record('n1', 1, '1')]);
      await fixture.flush();
      expect(await cache.claimFreshness()).toBe(true);
      expect(await cache.nodeHashes()).toEqual(new Map());
    });
  });
}

/** Blobs as text, to compare with what was put. */
function text(blobs: readonly (Buffer | null)[]): (string | null)[] {
  return blobs.map((blob) => (blob === null ? null : blob.toString('utf8')));
}
