import type { ApiTokenRecord, ApiTokenStore } from './api-token-store';
import { ApiTokenNameTakenError, nameTaken } from './api-token-store';

/** API tokens in this process's memory: the embedded mode and tests. */
export class MemoryApiTokenStore implements ApiTokenStore {
  private readonly records = new Map<string, ApiTokenRecord>();

  migrate(): Promise<void> {
    return Promise.resolve();
  }

  create(record: ApiTokenRecord): Promise<void> {
    if (nameTaken(this.records.values(), record))
      return Promise.reject(new ApiTokenNameTakenError(record.name));
    this.records.set(record.id, record);
    return Promise.resolve();
  }

  find(id: string): Promise<ApiTokenRecord | null> {
    return Promise.resolve(this.records.get(id) ?? null);
  }

  list(): Promise<ApiTokenRecord[]> {
    return Promise.resolve([...this.records.values()]);
  }

  revoke(id: string, at: Date): Promise<boolean> {
    const record = this.records.get(id);
    if (!record || record.revokedAt !== null) return Promise.resolve(false);
    this.records.set(id, { ...record, revokedAt: at });
    return Promise.resolve(true);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
