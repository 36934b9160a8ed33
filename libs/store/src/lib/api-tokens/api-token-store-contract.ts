import type { ApiTokenRecord, ApiTokenStore } from './api-token-store';
import { ApiTokenNameTakenError } from './api-token-store';

const T0 = new Date('2026-11-01T00:00:00Z');

function record(id: string, name: string, overrides: Partial<ApiTokenRecord> = {}): ApiTokenRecord {
  return {
    id,
    name,
    role: 'reader',
    digest: 'a'.repeat(64),
    createdAt: T0,
    createdBy: 'admin',
    expiresAt: null,
    revokedAt: null,
    ...overrides,
  };
}

/** What every API token store does, run against each implementation. */
export function describeApiTokenStoreContract(
  name: string,
  setup: () => { open(): ApiTokenStore; dispose(): Promise<void> },
): void {
  describe(name, () => {
    let store: ApiTokenStore;
    let dispose: () => Promise<void>;

    beforeEach(async () => {
      const opened = setup();
      store = opened.open();
      dispose = opened.dispose;
      await store.migrate();
      // A second migration changes nothing: every instance of a service migrates at start.
      await store.migrate();
    });

    afterEach(async () => {
      await store.close();
      await dispose();
    });

    it('keeps what it is given and finds it by id', async () => {
      const expiring = record('0000000000000001', 'ci', {
        role: 'editor',
        expiresAt: new Date('2027-01-01T00:00:00Z'),
      });
      await store.create(expiring);
      expect(await store.find('0000000000000001')).toEqual(expiring);
      expect(await store.find('ffffffffffffffff')).toBeNull();
    });

    it('refuses a name in force and accepts it again once that token is revoked or expired', async () => {
      await store.create(record('0000000000000001', 'ci'));
      await expect(store.create(record('0000000000000002', 'ci'))).rejects.toBeInstanceOf(
        ApiTokenNameTakenError,
      );
      expect(await store.revoke('0000000000000001', new Date(T0.getTime() + 1_000))).toBe(true);
      await store.create(record('0000000000000002', 'ci'));
      await store.create(record('0000000000000003', 'short', { expiresAt: new Date(T0.getTime() + 1_000) }));
      await store.create(record('0000000000000004', 'short', { createdAt: new Date(T0.getTime() + 2_000) }));
      expect((await store.list()).map((token) => token.id)).toEqual([
        '0000000000000001',
        '0000000000000002',
        '0000000000000003',
        '0000000000000004',
      ]);
    });

    it('revokes once: the revocation time is kept, a second revocation or an unknown id is false', async () => {
      await store.create(record('0000000000000001', 'ci'));
      const at = new Date('2026-11-02T00:00:00Z');
      expect(await store.revoke('0000000000000001', at)).toBe(true);
      expect(await store.revoke('0000000000000001', new Date())).toBe(false);
      expect(await store.revoke('ffffffffffffffff', at)).toBe(false);
      expect((await store.find('0000000000000001'))?.revokedAt).toEqual(at);
    });
  });
}
