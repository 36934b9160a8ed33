import { mkdtempSync, rmSync } from 'node:fs';
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyChangeSet } from '@policygen/engine';
import type { ParsedChangeSet } from '@policygen/engine';
import { describeConfigStoreContract } from '../config-store-contract';
import { FileConfigDatabase, FileConfigStore } from './file-config-store';

describeConfigStoreContract('FileConfigStore', () => {
  const directory = mkdtempSync(join(tmpdir(), 'file-config-store-'));
  const database = new FileConfigDatabase(join(directory, 'changes.journal'));
  return {
    open: (options) => new FileConfigStore({ database, ...options }),
    dispose: async () => {
      await database.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
});

function parameters(values: Record<string, number>): ParsedChangeSet {
  const empty = emptyChangeSet();
  return { ...empty, upsert: { ...empty.upsert, parameters: values } };
}

describe('FileConfigStore, beyond the contract', () => {
  let directory: string;
  let file: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'file-config-store-'));
    file = join(directory, 'config', 'changes.journal');
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it('reopens at the revision it had: same snapshot, log, authors, commit times and outbox', async () => {
    const first = new FileConfigStore({ file });
    await first.migrate();
    await first.commit(parameters({ a: 1 }), { author: 'alice', reason: 'first' });
    await first.commitAll([
      { changeSet: parameters({ b: 2 }) },
      { changeSet: parameters({ a: 3 }), author: 'bob' },
    ]);
    const [published] = await first.unpublished(1);
    await first.markPublished([published?.id ?? -1]);
    const before = {
      snapshot: await first.snapshot(),
      log: await first.changesSince(0),
      outbox: await first.unpublished(),
    };
    await first.close();

    const second = new FileConfigStore({ file });
    expect(await second.snapshot()).toEqual(before.snapshot);
    expect(await second.changesSince(0)).toEqual(before.log);
    expect(await second.unpublished()).toEqual(before.outbox);
    expect(before.outbox.map((message) => (message.payload as { revision: number }).revision)).toEqual([
      2, 3,
    ]);
    expect(second.journalDatabase.recovery).toEqual({ records: 3, tornBytes: 0 });
    expect((await second.commit(parameters({ c: 4 }), { expectedRevision: 3 })).revision).toBe(4);
    await second.close();
  });

  it('drops a commit torn by a crash: back at the last complete revision, the repair counted, and on from there', async () => {
    const first = new FileConfigStore({ file });
    await first.commit(parameters({ a: 1 }));
    await first.commit(parameters({ b: 2 }));
    await first.close();
    const journal = await readFile(file, 'utf8');
    const lastRecord = journal.slice(journal.lastIndexOf('\n', journal.length - 2) + 1);
    // Half of a third commit's record, as a process killed while writing it leaves it.
    const torn = lastRecord
      .replace('"revision":2', '"revision":3')
      .slice(0, Math.floor(lastRecord.length / 2));
    await appendFile(file, torn);

    const second = new FileConfigStore({ file });
    const snapshot = await second.snapshot();
    expect(snapshot.revision).toBe(2);
    expect(snapshot.fleet.parameters).toEqual({ a: 1, b: 2 });
    expect(second.journalDatabase.recovery).toEqual({ records: 2, tornBytes: Buffer.byteLength(torn) });
    expect((await second.commit(parameters({ c: 3 }))).revision).toBe(3);
    await second.close();
    const third = new FileConfigStore({ file });
    expect((await third.snapshot()).fleet.parameters).toEqual({ a: 1, b: 2, c: 3 });
    expect(third.journalDatabase.recovery?.tornBytes).toBe(0);
    await third.close();
  });

  it('refuses to open a journal damaged before its end, rather than lose the commits after the damage', async () => {
    const first = new FileConfigStore({ file });
    await first.commit(parameters({ a: 1 }));
    await first.commit(parameters({ b: 2 }));
    await first.close();
    const journal = await readFile(file, 'utf8');
    await writeFile(file, journal.replace('"a":1', '"a":7'));
    const second = new FileConfigStore({ file });
    await expect(second.snapshot()).rejects.toThrow(/changes\.journal:1: its checksum does not match/);
    await second.close();
  });

  it('journals nothing of a commit that cannot be stored', async () => {
    const first = new FileConfigStore({ file });
    await first.commit(parameters({ a: 1 }));
    await expect(first.commit(parameters({ b: 1n as unknown as number }))).rejects.toThrow(/BigInt/);
    await first.close();
    const second = new FileConfigStore({ file });
    expect(await second.snapshot()).toMatchObject({ revision: 1, fleet: { parameters: { a: 1 } } });
    expect(second.journalDatabase.recovery).toEqual({ records: 1, tornBytes: 0 });
    await second.close();
  });
});
