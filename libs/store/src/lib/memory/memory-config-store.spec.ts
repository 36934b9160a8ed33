import { emptyChangeSet } from '@policygen/engine';
import type { ParsedChangeSet } from '@policygen/engine';
import { describeConfigStoreContract } from '../config-store-contract';
import { MemoryConfigDatabase, MemoryConfigStore } from './memory-config-store';

describeConfigStoreContract('MemoryConfigStore', () => {
  const database = new MemoryConfigDatabase();
  return {
    open: (options) => new MemoryConfigStore({ database, ...options }),
    dispose: () => Promise.resolve(),
  };
});

function parameters(values: Record<string, number>): ParsedChangeSet {
  const empty = emptyChangeSet();
  return { ...empty, upsert: { ...empty.upsert, parameters: values } };
}

describe('MemoryConfigStore, beyond the contract', () => {
  it('sends change events to the topic it is given', async () => {
    const store = new MemoryConfigStore({ changeTopic: 'staging.policygen.config.changes.v1' });
    await store.commit(parameters({ a: 1 }));
    expect((await store.unpublished()).map((message) => message.topic)).toEqual([
      'staging.policygen.config.changes.v1',
    ]);
  });

  it('hands out copies: what a reader changes is not what the store holds', async () => {
    const store = new MemoryConfigStore();
    const committed = await store.commit(parameters({ a: 1 }));
    (committed.changeSet.upsert.parameters as Record<string, number>)['a'] = 2;
    const snapshot = await store.snapshot();
    (snapshot.fleet.parameters as Record<string, number>)['a'] = 3;
    expect((await store.snapshot()).fleet.parameters).toEqual({ a: 1 });
    expect((await store.changesSince(0))[0]?.changeSet.upsert.parameters).toEqual({ a: 1 });
  });

  it('commits nothing when a change set cannot be stored', async () => {
    const store = new MemoryConfigStore();
    await expect(store.commit(parameters({ a: 1n as unknown as number }))).rejects.toThrow(/BigInt/);
    expect(await store.snapshot()).toMatchObject({ revision: 0, fleet: { parameters: {} } });
    expect(await store.unpublished()).toEqual([]);
  });

  it('keeps published messages out of the outbox, and refuses use once closed', async () => {
    const database = new MemoryConfigDatabase();
    const store = new MemoryConfigStore({ database });
    for (let index = 0; index < 3; index++) await store.commit(parameters({ [`p${index}`]: index }));
    const [first, ...rest] = await store.unpublished();
    await store.markPublished([first?.id ?? -1]);
    expect(await store.unpublished()).toEqual(rest);
    expect(database.outbox).toHaveLength(2);
    await store.close();
    await expect(store.snapshot()).rejects.toThrow('the config store is closed');
    // The tables outlive the store, as a database outlives a connection.
    expect((await new MemoryConfigStore({ database }).snapshot()).revision).toBe(3);
  });
});
