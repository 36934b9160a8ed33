/// <reference types="jest" />
import fc from 'fast-check';
import { emptyChangeSet, GenerationEngine, validateFleet } from '@policygen/engine';
import type { Fleet, ParsedChangeSet } from '@policygen/engine';
import { parseEvent, TOPICS } from '@policygen/events';
import { buildDemoFleet } from '@policygen/fleets';
import type { ChangeToCommit, ConfigStore, OutboxMessage } from './config-store';
import { RevisionConflictError } from './config-store';

/**
 * What every config store does, as jest tests: run by each adapter's spec (Postgres, in memory)
 * against its own store, so that they provably behave alike. Test-only: not exported by the library.
 */

/** The tables of one test, and stores on them. */
export interface ConfigStoreFixture {
  /** A store on the test's tables; every store opened shares them, as connections share a database. */
  open(options?: { readonly maxEventBytes?: number }): ConfigStore;
  /** Drops the test's tables, once every store opened is closed. */
  dispose(): Promise<void>;
}

function demoFleet(): Fleet {
  const result = validateFleet(buildDemoFleet());
  if (!result.ok) throw new Error('the demo fleet is invalid');
  return result.fleet;
}

/** A change set validated the way the config service will: against an engine at the same revision. */
function validated(engine: GenerationEngine, input: unknown): ParsedChangeSet {
  const outcome = engine.apply(input);
  if (!outcome.ok)
    throw new Error(outcome.issues.map((issue) => `${issue.path}: ${issue.message}`).join('\n'));
  return outcome.change;
}

function importOf(fleet: Fleet): unknown {
  const { settings, parameters, ...collections } = fleet;
  return { upsert: { settings, parameters, ...collections } };
}

/** Change sets to commit with nobody named. */
function attributed(...changeSets: readonly ParsedChangeSet[]): ChangeToCommit[] {
  return changeSets.map((changeSet) => ({ changeSet }));
}

function emptyEngine(): GenerationEngine {
  const empty = validateFleet({});
  if (!empty.ok) throw new Error('empty fleet invalid');
  return GenerationEngine.fromFleet(empty.fleet);
}

export function describeConfigStoreContract(name: string, newFixture: () => ConfigStoreFixture): void {
  describe(name, () => {
    let fixture: ConfigStoreFixture;
    let opened: ConfigStore[];
    let store: ConfigStore;
    const open = (options?: { maxEventBytes?: number }): ConfigStore => {
      const opening = fixture.open(options);
      opened.push(opening);
      return opening;
    };

    beforeEach(async () => {
      fixture = newFixture();
      opened = [];
      store = open();
      await store.migrate();
    });
    afterEach(async () => {
      await Promise.all(opened.map((each) => each.close()));
      await fixture.dispose();
    });

    it('keeps a whole fleet: the snapshot after an import is the fleet, at revision 1', async () => {
      const engine = emptyEngine();
      const fleet = demoFleet();
      const committed = await store.commit(validated(engine, importOf(fleet)));
      expect(committed.revision).toBe(1);
      const snapshot = await store.snapshot();
      expect(snapshot.revision).toBe(1);
      expect(snapshot.fleet).toEqual(engine.toFleet());
      // Key order too, where it has meaning: a technique's promise attributes render in the order they are written.
      // (Global parameters are a map read by name, kept sorted.)
      const ordered = (fleet: Fleet): string => JSON.stringify({ ...fleet, parameters: {} });
      expect(ordered(snapshot.fleet)).toBe(ordered(engine.toFleet()));
      const [message] = await store.unpublished();
      expect(JSON.stringify((message?.payload as { changeSet: unknown }).changeSet)).toBe(
        JSON.stringify(committed.changeSet),
      );
      await store.migrate(); // a second migration is a no-op
      expect((await store.snapshot()).revision).toBe(1);
    });

    it('starts empty, at revision 0, with the default settings', async () => {
      const snapshot = await store.snapshot();
      expect(snapshot).toMatchObject({ revision: 0, fleet: emptyEngine().toFleet() });
      expect(snapshot.entityRevisions.of('settings', 'settings')).toBeUndefined();
      expect(await store.revisions(0, 10)).toEqual([]);
      expect(await store.revision(1)).toBeUndefined();
      expect(await store.changesSince(0)).toEqual([]);
      expect(await store.unpublished()).toEqual([]);
    });

    it('leaves a change set too large for a message out of its event, and keeps it whole in the log', async () => {
      const small = open({ maxEventBytes: 4_096 });
      const engine = emptyEngine();
      const imported = validated(engine, importOf(demoFleet()));
      await small.commit(imported);
      await small.commit(validated(engine, { upsert: { parameters: { extra: 1 } } }));
      const [large, inline] = (await small.unpublished()).map((message) => message.payload);
      expect(large).toEqual({
        schemaVersion: 1,
        type: 'config.change',
        revision: 1,
        committedAt: expect.any(String),
        changeSetOmitted: { bytes: Buffer.byteLength(JSON.stringify(imported)) },
      });
      expect(parseEvent(TOPICS.configChanges, large).ok).toBe(true);
      expect(inline).toMatchObject({ revision: 2, changeSet: { upsert: { parameters: { extra: 1 } } } });
      expect((await small.changesSince(0))[0]?.changeSet).toEqual(imported);
    });

    it('gives each commit the next revision, logs it, and writes its event to the outbox in the same transaction', async () => {
      const engine = emptyEngine();
      await store.commit(validated(engine, importOf(demoFleet())));
      const node = engine.compiled.nodes.get('web-par-001');
      await store.commit(
        validated(engine, {
          upsert: { nodes: [{ ...node, properties: { ...node?.properties, team: 'a' } }] },
        }),
      );
      await store.commit(
        validated(engine, { upsert: { parameters: { extra: 1 }, settings: { orderingSeed: 3 } } }),
      );
      await store.commit(validated(engine, { delete: { parameters: ['extra'] } }));

      expect((await store.changesSince(0)).map((change) => change.revision)).toEqual([1, 2, 3, 4]);
      expect((await store.changesSince(2)).map((change) => change.revision)).toEqual([3, 4]);
      const snapshot = await store.snapshot();
      expect(snapshot).toMatchObject({ revision: 4, fleet: engine.toFleet() });
      expect(snapshot.fleet.settings.orderingSeed).toBe(3);

      const outbox = await store.unpublished();
      expect(outbox.map((message) => message.topic)).toEqual(Array(4).fill(TOPICS.configChanges));
      expect(outbox.map((message) => message.key)).toEqual(Array(4).fill('config'));
      const events = outbox.map((message) => parseEvent(TOPICS.configChanges, message.payload));
      expect(events.map((event) => (event.ok ? event.event.revision : -1))).toEqual([1, 2, 3, 4]);

      expect(await store.unpublishedCount()).toBe(4);
      await store.markPublished(outbox.slice(0, 3).map((message) => message.id));
      expect((await store.unpublished()).map((message) => message.id)).toEqual([outbox[3]?.id]);
      expect(await store.unpublishedCount()).toBe(1);
      await expect(store.ping()).resolves.toBeUndefined();
    });

    it('gives with each commit the outbox message it wrote, as a read of the outbox gives it', async () => {
      const engine = emptyEngine();
      const plain = (message: OutboxMessage | undefined) =>
        message && { id: message.id, topic: message.topic, key: message.key, value: message.value };
      const given = [
        // Each way a store commits: with and without an expected revision, alone and grouped, with settings.
        await store.commit(validated(engine, importOf(demoFleet()))),
        await store.commit(validated(engine, { upsert: { parameters: { one: 1 } } }), {
          expectedRevision: 1,
        }),
        ...(await store.commitAll(
          attributed(
            validated(engine, { upsert: { parameters: { two: 2 } } }),
            validated(engine, { upsert: { parameters: { three: 3 } } }),
          ),
          { expectedRevision: 2 },
        )),
        await store.commit(validated(engine, { upsert: { settings: { orderingSeed: 7 } } }), {
          expectedRevision: 4,
        }),
      ];
      expect(given.map((change) => plain(change.outboxMessage))).toEqual(
        (await store.unpublished()).map(plain),
      );
      expect((await store.changesSince(0)).map((change) => change.outboxMessage)).toEqual(
        Array(5).fill(undefined),
      );
    });

    it('marks outbox messages with a commit, whether or not its expected revision holds, and reads after an id', async () => {
      const engine = emptyEngine();
      for (let index = 1; index <= 4; index++)
        await store.commit(validated(engine, { upsert: { parameters: { [`p${index}`]: index } } }));
      const [first, second, third, fourth] = await store.unpublished();
      expect((await store.unpublished(10, second?.id)).map((message) => message.id)).toEqual([
        third?.id,
        fourth?.id,
      ]);
      expect(JSON.parse(third?.value ?? '')).toEqual(third?.payload);

      // A settings change takes a store's long way (read under the lock): it marks all the same.
      await store.commit(validated(engine, { upsert: { settings: { orderingSeed: 5 } } }), {
        expectedRevision: 4,
        markPublished: [first?.id ?? -1],
      });
      await store.commit(validated(engine, { upsert: { parameters: { p5: 5 } } }), {
        expectedRevision: 5,
        markPublished: [second?.id ?? -1],
      });
      await expect(
        store.commit(validated(emptyEngine(), { upsert: { parameters: { late: 1 } } }), {
          expectedRevision: 3,
          markPublished: [third?.id ?? -1],
        }),
      ).rejects.toBeInstanceOf(RevisionConflictError);
      const waiting = await store.unpublished();
      const revisions = waiting.map((message) => (message.payload as { revision: number }).revision);
      expect(revisions).toEqual([4, 5, 6]);
      expect(await store.unpublishedCount()).toBe(3);
      expect((await store.snapshot()).revision).toBe(6);
    });

    it('deletes entities, logs the change set it was given, and pages the log and the outbox', async () => {
      const engine = emptyEngine();
      await store.commit(validated(engine, importOf(demoFleet())));
      const fleet = engine.toFleet();
      const deleted = validated(engine, {
        delete: {
          nodes: fleet.nodes.slice(0, 2).map((node) => node.id),
          relationships: fleet.relationships.slice(0, 1),
          parameters: Object.keys(fleet.parameters).slice(0, 1),
        },
      });
      const committed = await store.commit(deleted);
      expect(committed).toEqual({
        revision: 2,
        committedAt: expect.any(Date),
        author: null,
        reason: null,
        counts: {
          nodes: { upserted: 0, deleted: 2 },
          relationships: { upserted: 0, deleted: 1 },
          parameters: { upserted: 0, deleted: 1 },
        },
        changeSet: deleted,
        outboxMessage: expect.objectContaining({ topic: TOPICS.configChanges, key: 'config' }),
      });
      const snapshot = await store.snapshot();
      expect(snapshot.fleet).toEqual(engine.toFleet());
      expect(snapshot.fleet.nodes).toHaveLength(fleet.nodes.length - 2);

      const [first, second] = await store.changesSince(0);
      expect(second).toEqual({ ...committed, outboxMessage: undefined });
      expect(first?.committedAt.getTime()).toBeLessThanOrEqual(committed.committedAt.getTime());
      expect((await store.changesSince(0, 1)).map((change) => change.revision)).toEqual([1]);
      expect(await store.changesSince(2)).toEqual([]);
      expect((await store.unpublished(1)).map((message) => message.payload)).toEqual([
        expect.objectContaining({ revision: 1, committedAt: first?.committedAt.toISOString() }),
      ]);
    });

    it('refuses a commit made against an older revision, changing nothing', async () => {
      const engine = emptyEngine();
      await store.commit(validated(engine, importOf(demoFleet())), { expectedRevision: 0 });
      const change = validated(engine, { upsert: { parameters: { late: true } } });
      await expect(store.commit(change, { expectedRevision: 0 })).rejects.toThrow(RevisionConflictError);
      await expect(store.commit(change, { expectedRevision: 0 })).rejects.toThrow(
        'the configuration is at revision 1, not 0',
      );
      expect((await store.snapshot()).revision).toBe(1);
      expect(await store.unpublished()).toHaveLength(1);
      expect((await store.commit(change, { expectedRevision: 1 })).revision).toBe(2);
    });

    it('commits several change sets at consecutive revisions in one go, or none of them', async () => {
      const engine = emptyEngine();
      await store.commit(validated(engine, importOf(demoFleet())));
      const first = validated(engine, {
        upsert: { parameters: { one: 1 }, settings: { ordering: 'random' } },
      });
      const second = validated(engine, {
        upsert: { parameters: { two: 2 }, settings: { orderingSeed: 42 } },
      });
      await expect(store.commitAll(attributed(first, second), { expectedRevision: 0 })).rejects.toThrow(
        RevisionConflictError,
      );
      expect((await store.snapshot()).revision).toBe(1);
      const committed = await store.commitAll(attributed(first, second), { expectedRevision: 1 });
      expect(committed.map((change) => change.revision)).toEqual([2, 3]);
      expect(committed.map((change) => change.changeSet)).toEqual([first, second]);
      const snapshot = await store.snapshot();
      expect(snapshot.revision).toBe(3);
      expect(snapshot.fleet.parameters).toMatchObject({ one: 1, two: 2 });
      // Settings merge one change set after the other, as two commits would.
      expect(snapshot.fleet.settings).toMatchObject({ ordering: 'random', orderingSeed: 42 });
      expect((await store.changesSince(1)).map((change) => change.revision)).toEqual([2, 3]);
      expect((await store.unpublished()).map((message) => message.payload)).toEqual([
        expect.objectContaining({ revision: 1 }),
        expect.objectContaining({ revision: 2 }),
        expect.objectContaining({ revision: 3 }),
      ]);
      expect(await store.commitAll([])).toEqual([]);
    });

    it('leaves, after a group of change sets, what committing them one by one would leave', async () => {
      const names = ['a', 'b', 'c'];
      const step = fc.record({
        upsert: fc.dictionary(fc.constantFrom(...names), fc.integer({ min: 0, max: 3 }), { maxKeys: 3 }),
        delete: fc.subarray(names),
      });
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), async (steps) => {
          run++;
          const name = (short: string): string => `r${run}-${short}`;
          const model = new Map<string, number>();
          const changeSets = steps.map((each): ParsedChangeSet => {
            const empty = emptyChangeSet();
            for (const deleted of each.delete) model.delete(name(deleted));
            for (const [key, value] of Object.entries(each.upsert)) model.set(name(key), value);
            return {
              ...empty,
              upsert: {
                ...empty.upsert,
                parameters: Object.fromEntries(
                  Object.entries(each.upsert).map(([key, value]) => [name(key), value]),
                ),
              },
              delete: { ...empty.delete, parameters: each.delete.map(name) },
            };
          });
          await store.commitAll(attributed(...changeSets));
          const parameters = (await store.snapshot()).fleet.parameters;
          const ours = Object.entries(parameters).filter(([key]) => key.startsWith(`r${run}-`));
          expect(new Map(ours)).toEqual(model);
        }),
        { numRuns: 25 },
      );
    });

    it('records who committed each revision, why, and how much it changed', async () => {
      const engine = emptyEngine();
      const imported = validated(engine, importOf(demoFleet()));
      await store.commit(imported, { author: 'ci-import', reason: 'initial import' });
      const node = engine.compiled.nodes.get('web-par-001');
      const edit = validated(engine, {
        upsert: { nodes: [{ ...node, properties: { team: 'a' } }], settings: { orderingSeed: 7 } },
        delete: { parameters: [Object.keys(engine.compiled.parameters)[0]] },
      });
      const [second, third] = await store.commitAll([
        { changeSet: edit, author: 'alice', reason: 'team a owns it' },
        { changeSet: validated(engine, { upsert: { parameters: { extra: 1 } } }), author: 'bob' },
      ]);
      expect(second).toMatchObject({ revision: 2, author: 'alice', reason: 'team a owns it' });
      expect(third).toMatchObject({ revision: 3, author: 'bob', reason: null });

      const [first, ...later] = await store.revisions(0, 10);
      expect(first).toEqual({
        revision: 1,
        committedAt: expect.any(Date),
        author: 'ci-import',
        reason: 'initial import',
        counts: expect.objectContaining({
          nodes: { upserted: demoFleet().nodes.length, deleted: 0 },
          settings: { upserted: Object.keys(imported.upsert.settings).length, deleted: 0 },
        }),
      });
      expect(later).toEqual([
        {
          revision: 2,
          committedAt: second?.committedAt,
          author: 'alice',
          reason: 'team a owns it',
          counts: {
            nodes: { upserted: 1, deleted: 0 },
            parameters: { upserted: 0, deleted: 1 },
            settings: { upserted: 1, deleted: 0 },
          },
        },
        {
          revision: 3,
          committedAt: third?.committedAt,
          author: 'bob',
          reason: null,
          counts: { parameters: { upserted: 1, deleted: 0 } },
        },
      ]);
      // The log gives back what the commit gave, but the outbox message it wrote.
      expect(await store.revision(2)).toEqual({ ...second, outboxMessage: undefined });
      expect(await store.revision(4)).toBeUndefined();
      expect(await store.revision(0)).toBeUndefined();
      expect((await store.changesSince(1)).map((change) => [change.author, change.reason])).toEqual([
        ['alice', 'team a owns it'],
        ['bob', null],
      ]);
    });

    it("knows each entity's own last revision: the one that last wrote it", async () => {
      const engine = emptyEngine();
      await store.commit(validated(engine, importOf(demoFleet())));
      const [first, second] = engine.toFleet().nodes;
      await store.commitAll([
        { changeSet: validated(engine, { upsert: { nodes: [{ ...first, properties: { a: 1 } }] } }) },
        { changeSet: validated(engine, { upsert: { settings: { orderingSeed: 5 }, parameters: { p: 1 } } }) },
      ]);
      await store.commit(validated(engine, { delete: { nodes: [second?.id] } }));
      const { entityRevisions } = await store.snapshot();
      expect(entityRevisions.of('nodes', first?.id ?? '')).toBe(2);
      expect(entityRevisions.of('nodes', second?.id ?? '')).toBeUndefined();
      expect(entityRevisions.of('nodes', engine.toFleet().nodes[1]?.id ?? '')).toBe(1);
      expect(entityRevisions.of('settings', 'settings')).toBe(3);
      expect(entityRevisions.of('parameter', 'p')).toBe(3);
      const technique = engine.toFleet().techniques[0];
      expect(entityRevisions.of('techniques', `${technique?.id}@${technique?.version}`)).toBe(1);
    });

    it('pages through the revisions, whatever the page size: each once, in order', async () => {
      const count = 7;
      for (let index = 0; index < count; index++) {
        const empty = emptyChangeSet();
        await store.commit(
          { ...empty, upsert: { ...empty.upsert, parameters: { [`p${index}`]: index } } },
          { author: `author-${index}` },
        );
      }
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: count + 2 }),
          fc.integer({ min: 0, max: count }),
          async (limit, start) => {
            const seen: number[] = [];
            for (let after = start; ;) {
              const page = await store.revisions(after, limit);
              expect(page.length).toBeLessThanOrEqual(limit);
              seen.push(...page.map((record) => record.revision));
              const last = page.at(-1);
              if (page.length < limit || !last) break;
              after = last.revision;
            }
            expect(seen).toEqual(Array.from({ length: count - start }, (_, index) => start + index + 1));
          },
        ),
        { numRuns: 30 },
      );
      expect((await store.revisions(2, 1))[0]?.author).toBe('author-2');
    });

    it('numbers concurrent commits without a gap, even when some fail', async () => {
      const parallel = open();
      const change = (index: number): ParsedChangeSet => {
        const empty = emptyChangeSet();
        return { ...empty, upsert: { ...empty.upsert, parameters: { [`p${index}`]: index } } };
      };
      const outcomes = await Promise.allSettled(
        Array.from({ length: 40 }, (_, index) =>
          // Every fifth expects revision 0, which only the first commit could have: they fail.
          (index % 5 === 4 ? parallel : store).commit(
            change(index),
            index % 5 === 4 ? { expectedRevision: 0 } : {},
          ),
        ),
      );
      const revisions = outcomes.flatMap((outcome) =>
        outcome.status === 'fulfilled' ? [outcome.value.revision] : [],
      );
      expect(revisions.length).toBeGreaterThanOrEqual(32);
      expect([...revisions].sort((a, b) => a - b)).toEqual(revisions.map((_, index) => index + 1));
      expect((await store.changesSince(0)).map((entry) => entry.revision)).toEqual(
        revisions.map((_, index) => index + 1),
      );
      expect(await store.unpublished()).toHaveLength(revisions.length);
      expect(Object.keys((await store.snapshot()).fleet.parameters)).toHaveLength(revisions.length);
    });

    it('lets one of concurrent commits expecting the same revision through, and the others write nothing', async () => {
      const instances = [store, open(), open()];
      const change = (index: number): ParsedChangeSet => {
        const empty = emptyChangeSet();
        return {
          upsert: { ...empty.upsert, parameters: { [`p${index}`]: index, shared: index } },
          delete: { ...empty.delete, parameters: index === 0 ? [] : [`p${index - 1}`] },
        };
      };
      for (let round = 0; round < 5; round++) {
        const outcomes = await Promise.allSettled(
          Array.from({ length: 6 }, (_, index) =>
            (instances[index % instances.length] as ConfigStore).commit(change(round * 6 + index), {
              expectedRevision: round,
            }),
          ),
        );
        const won = outcomes.flatMap((outcome, index) => (outcome.status === 'fulfilled' ? [index] : []));
        expect(won).toHaveLength(1);
        for (const outcome of outcomes)
          if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(RevisionConflictError);
        const winner = round * 6 + (won[0] as number);
        const snapshot = await store.snapshot();
        expect(snapshot.revision).toBe(round + 1);
        expect(snapshot.fleet.parameters['shared']).toBe(winner);
        expect(snapshot.entityRevisions.of('parameter', 'shared')).toBe(round + 1);
      }
      expect((await store.changesSince(0)).map((entry) => entry.revision)).toEqual([1, 2, 3, 4, 5]);
      expect(await store.unpublished()).toHaveLength(5);
    });
  });
}
