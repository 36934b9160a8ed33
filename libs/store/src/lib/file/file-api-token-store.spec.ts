import { mkdtempSync, rmSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeApiTokenStoreContract } from '../api-tokens/api-token-store-contract';
import { FileApiTokenStore } from './file-api-token-store';

describeApiTokenStoreContract('FileApiTokenStore', () => {
  const directory = mkdtempSync(join(tmpdir(), 'file-api-tokens-'));
  return {
    open: () => new FileApiTokenStore(join(directory, 'api-tokens.journal')),
    dispose: async () => rmSync(directory, { recursive: true, force: true }),
  };
});

describe('FileApiTokenStore, beyond the contract', () => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'file-api-tokens-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it('gives back after a restart every token created and every revocation, and drops a torn one', async () => {
    const file = join(directory, 'api-tokens.journal');
    const created = new Date('2026-11-01T00:00:00.000Z');
    const token = (id: string, name: string) => ({
      id,
      name,
      role: 'editor' as const,
      digest: 'b'.repeat(64),
      createdAt: created,
      createdBy: 'admin',
      expiresAt: new Date('2027-01-01T00:00:00.000Z'),
      revokedAt: null,
    });
    const first = new FileApiTokenStore(file);
    await first.migrate();
    await first.create(token('0000000000000001', 'ci'));
    await first.create(token('0000000000000002', 'dashboard'));
    const revokedAt = new Date('2026-11-02T00:00:00.000Z');
    expect(await first.revoke('0000000000000001', revokedAt)).toBe(true);
    await first.close();
    // A crash in the middle of writing a third token.
    await appendFile(file, '1234abcd {"type":"create","token":{"id":"00000');

    const second = new FileApiTokenStore(file);
    expect(await second.list()).toEqual([
      { ...token('0000000000000001', 'ci'), revokedAt },
      token('0000000000000002', 'dashboard'),
    ]);
    expect(second.recovery).toEqual({ records: 3, tornBytes: 46 });
    // The name of the revoked token is free again, and the journal goes on after the repair.
    await second.create(token('0000000000000003', 'ci'));
    await second.close();
    const third = new FileApiTokenStore(file);
    expect((await third.list()).map((each) => each.id)).toEqual([
      '0000000000000001',
      '0000000000000002',
      '0000000000000003',
    ]);
    expect(third.recovery?.tornBytes).toBe(0);
    await third.close();
  });
});
