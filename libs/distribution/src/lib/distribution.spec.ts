import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { BlobDirectory } from './disk/blob-directory';
import { FeedLog } from './disk/feed-log';
import type { FeedEntry } from './feed';
import { entryFor } from './feed';
import { DistributionLedger } from './ledger';
import { RelayTopology } from './topology';

const HASH_A = `sha256:${'a'.repeat(64)}`;
const HASH_B = `sha256:${'b'.repeat(64)}`;
const AT = '2026-11-21T10:00:00.000Z';

function bundle(hash: string, revision: number) {
  return { nodeId: 'n1', hash, revision, committedAt: AT, generatedAt: AT, files: [] };
}

describe('RelayTopology', () => {
  const topology = () =>
    RelayTopology.of({
      relays: [
        { id: 'eu', policyServer: 'root' },
        { id: 'eu-par', policyServer: 'eu' },
      ],
      nodes: [
        { id: 'n1', policyServer: 'eu-par' },
        { id: 'n2', policyServer: 'root' },
      ],
    });

  it('gives each node the relays from root down to its policy server', () => {
    expect(topology().servingPath('n1')).toEqual(['root', 'eu', 'eu-par']);
    expect(topology().servingPath('n2')).toEqual(['root']);
    expect(topology().servingPath('unknown')).toEqual([]);
  });

  it('names the nodes a change set may move: its nodes, or every node when a relay moves', () => {
    const moved = topology();
    expect([...moved.apply({ upsert: { nodes: [{ id: 'n2', policyServer: 'eu' }] } })]).toEqual(['n2']);
    expect(moved.servingPath('n2')).toEqual(['root', 'eu']);
    expect([...moved.apply({ upsert: { relays: [{ id: 'eu-par', policyServer: 'root' }] } })].sort()).toEqual(
      ['n1', 'n2'],
    );
    expect(moved.servingPath('n1')).toEqual(['root', 'eu-par']);
    expect([...moved.apply({ delete: { nodes: ['n1'] } })]).toEqual(['n1']);
    expect(moved.servingPath('n1')).toEqual([]);
  });

  it('refuses a malformed change set, naming the path', () => {
    expect(() => topology().apply({ upsert: { nodes: [{ policyServer: 'eu' }] } })).toThrow(
      /\$\.changeSet\.upsert\.nodes\.0\.id/,
    );
  });
});

describe('the feed on disk', () => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-feed-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  const entry = (
    seq: number,
    nodeId: string,
    path: string[],
    previousPath: string[],
    hash: string | null,
  ): FeedEntry => ({
    seq,
    nodeId,
    path,
    previousPath,
    revision: seq,
    bundle: hash === null ? null : { ...bundle(hash, seq), distributedAt: AT, nodeKey: null },
  });

  it('gives each relay its entries after a cursor, and survives a restart and a torn last line', async () => {
    const file = join(directory, 'feed.jsonl');
    const log = await FeedLog.open(file, { durable: true });
    await log.append([entry(1, 'n1', ['root', 'eu'], [], HASH_A), entry(2, 'n2', ['root'], [], HASH_A)]);
    expect(log.after(0, 'eu', 10).entries.map((e) => e.seq)).toEqual([1]);
    expect(log.after(0, 'root', 10).entries.map((e) => e.seq)).toEqual([1, 2]);
    expect(log.after(1, 'eu', 10)).toEqual({ entries: [], next: 2 });
    await log.advance(9);
    await log.close();
    appendFileSync(file, '{"seq":10,"nodeId":"half');

    const reopened = await FeedLog.open(file);
    expect(reopened.cursor).toBe(9);
    expect(reopened.latest('n1')?.bundle?.hash).toBe(HASH_A);
    await reopened.append([entry(10, 'n1', ['root'], ['root', 'eu'], HASH_B)]);
    expect(entryFor(reopened.after(9, 'eu', 10).entries[0] as FeedEntry, 'eu')).toBe('drop');
    await reopened.close();
  });

  it('brings every relay, from any cursor, to what the whole history says it holds, compacted or not', async () => {
    const relays = ['eu', 'us', 'eu-par'];
    const change = fc.record({
      node: fc.constantFrom('n1', 'n2', 'n3'),
      // As the ledger writes them: a new bundle where the node is, a move, or a removal in place.
      kind: fc.constantFrom('bundle', 'move', 'remove'),
      relay: fc.constantFrom(...relays, null),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(change, { minLength: 1, maxLength: 30 }),
        fc.nat(30),
        async (changes, seed) => {
          const file = join(mkdtempSync(join(directory, 'case-')), 'feed.jsonl');
          const plain = await FeedLog.open(file);
          const compacted = await FeedLog.open(`${file}.compacted`, { compactAfter: 1 });
          const history: FeedEntry[] = [];
          const placed = new Map<string, { path: string[]; hash: string | null }>();
          for (const [index, { node, kind, relay }] of changes.entries()) {
            const held = placed.get(node) ?? { path: [], hash: null };
            const path = kind === 'move' ? (relay === null ? [] : ['root', relay]) : held.path;
            const hash =
              kind === 'remove'
                ? null
                : kind === 'bundle'
                  ? `${HASH_A.slice(0, -4)}${String(index).padStart(4, '0')}`
                  : held.hash;
            placed.set(node, { path, hash });
            const next = entry(index + 1, node, path, held.path, hash);
            history.push(next);
            await plain.append([next]);
            await compacted.append([next]);
          }
          const cursor = seed % (changes.length + 1);
          const apply = (state: Map<string, boolean>, entries: readonly FeedEntry[], relay: string) => {
            for (const e of entries) {
              const meaning = entryFor(e, relay);
              if (meaning !== null) state.set(e.nodeId, meaning === 'keep');
            }
            return state;
          };
          const kept = (state: Map<string, boolean>) =>
            [...state]
              .filter(([, keeps]) => keeps)
              .map(([nodeId]) => nodeId)
              .sort();
          for (const relay of ['root', ...relays]) {
            const truth = kept(apply(new Map(), history, relay));
            for (const [name, log] of [
              ['plain', plain],
              ['compacted', compacted],
            ] as const) {
              // A relay that read everything up to the cursor, then the feed's page after it.
              const replica = apply(new Map(), history.slice(0, cursor), relay);
              const caughtUp = kept(apply(replica, log.after(cursor, relay, 1_000).entries, relay));
              expect({ name, relay, cursor, kept: caughtUp }).toEqual({ name, relay, cursor, kept: truth });
            }
          }
          await plain.close();
          await compacted.close();
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('DistributionLedger', () => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-ledger-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it('writes an entry for a new bundle or a new place, never for a stale or repeated bundle', async () => {
    const log = await FeedLog.open(join(directory, 'feed.jsonl'));
    const ledger = new DistributionLedger(log, (nodeId) => `key-of-${nodeId}`);
    const topology = RelayTopology.of({
      relays: [{ id: 'eu', policyServer: 'root' }],
      nodes: [{ id: 'n1', policyServer: 'eu' }],
    });
    expect(ledger.placeOn(topology, null)).toEqual([]);

    const first = ledger.bundleArrived(bundle(HASH_A, 3));
    expect(first).toMatchObject({ nodeId: 'n1', path: ['root', 'eu'], previousPath: [], revision: 3 });
    expect(first?.bundle?.nodeKey).toBe('key-of-n1');
    await log.append(ledger.number(first ? [first] : []));
    expect(ledger.bundleArrived(bundle(HASH_A, 4))).toBeNull();
    expect(ledger.bundleArrived(bundle(HASH_B, 2))).toBeNull();

    topology.apply({ upsert: { nodes: [{ id: 'n1', policyServer: 'root' }] } });
    const moved = ledger.placeOn(topology, ['n1']);
    expect(moved).toMatchObject([
      { nodeId: 'n1', path: ['root'], previousPath: ['root', 'eu'], revision: 3 },
    ]);
    await log.append(ledger.number(moved));
    expect(ledger.bundleRemoved('n1', 2)).toBeNull();
    expect(ledger.bundleRemoved('n1', 5)).toMatchObject({
      path: ['root'],
      previousPath: ['root'],
      bundle: null,
    });
    await log.close();
  });

  it('writes again, as a catch-up, the bundles whose node key the secret no longer gives', async () => {
    const log = await FeedLog.open(join(directory, 'feed.jsonl'));
    let secretVersion = 1;
    const ledger = new DistributionLedger(log, (nodeId) => `key-${secretVersion}-of-${nodeId}`);
    const arrived = ledger.bundleArrived(bundle(HASH_A, 3));
    await log.append(ledger.number(arrived ? [arrived] : []));
    expect(ledger.rekeyed()).toEqual([]);

    secretVersion = 2;
    const rekeyed = ledger.rekeyed();
    expect(rekeyed).toMatchObject([
      { nodeId: 'n1', revision: 3, bundle: { hash: HASH_A, nodeKey: 'key-2-of-n1', catchUp: true } },
    ]);
    await log.append(ledger.number(rekeyed));
    expect(ledger.rekeyed()).toEqual([]);
    await log.close();
  });
});

describe('DistributionLedger node keys', () => {
  /**
   * Arrivals of bundles; restarts, with the secret rotated or not; the start's re-keying, its
   * entries appended, or lost (the disk refused them).
   */
  const steps = fc.array(
    fc.oneof(
      fc.record({
        kind: fc.constant('arrive' as const),
        node: fc.nat(3),
        hash: fc.constantFrom(HASH_A, HASH_B),
      }),
      fc.record({ kind: fc.constant('restart' as const), rotate: fc.boolean() }),
      fc.record({ kind: fc.constant('rekey' as const), lost: fc.boolean() }),
    ),
    { maxLength: 30 },
  );

  it("gives every new entry its node's key under the secret of now, held keys taken only once current", async () => {
    await fc.assert(
      fc.asyncProperty(steps, async (plan) => {
        const directory = mkdtempSync(join(tmpdir(), 'policygen-ledger-keys-'));
        try {
          const log = await FeedLog.open(join(directory, 'feed.jsonl'));
          let secret = 1;
          const keyOf = (nodeId: string): string => `key-${secret}-of-${nodeId}`;
          // A ledger lives as long as its secret: a rotation is a restart with a new one.
          let ledger = new DistributionLedger(log, keyOf);
          let revision = 1;
          const keys: { given: string | null | undefined; expected: string }[] = [];
          for (const step of plan) {
            if (step.kind === 'restart') {
              if (step.rotate) secret++;
              ledger = new DistributionLedger(log, keyOf);
            } else if (step.kind === 'rekey') {
              const entries = ledger.rekeyed();
              if (!step.lost) await log.append(ledger.number(entries));
            } else {
              const nodeId = `n${step.node}`;
              const entry = ledger.bundleArrived({ ...bundle(step.hash, revision++), nodeId });
              if (!entry) continue;
              keys.push({ given: entry.bundle?.nodeKey, expected: keyOf(nodeId) });
              await log.append(ledger.number([entry]));
            }
          }
          await log.close();
          expect(keys.map(({ given }) => given)).toEqual(keys.map(({ expected }) => expected));
        } finally {
          rmSync(directory, { recursive: true, force: true });
        }
      }),
      {
        numRuns: 100,
        examples: [
          [
            [
              { kind: 'arrive', node: 0, hash: HASH_A },
              { kind: 'restart', rotate: true },
              { kind: 'rekey', lost: true },
              { kind: 'arrive', node: 0, hash: HASH_B },
            ],
          ],
        ],
      },
    );
  });
});

describe('BlobDirectory', () => {
  it('stores a content under its own digest only, once, and finds it again after reopening', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'policygen-blobs-'));
    try {
      const blobs = await BlobDirectory.open(directory);
      const digest = 'b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9';
      await expect(blobs.write(digest, 'hello world!')).rejects.toThrow(/refused/);
      expect(await blobs.write(digest, 'hello world')).toBe(true);
      expect(await blobs.write(digest, 'hello world')).toBe(false);
      const reopened = await BlobDirectory.open(directory);
      expect(reopened.has(digest)).toBe(true);
      expect((await reopened.read(digest)).toString()).toBe('hello world');
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
