import type { ApiTokenRecord, ApiTokenRole, ApiTokenStore } from '../api-tokens/api-token-store';
import { ApiTokenNameTakenError, nameTaken } from '../api-tokens/api-token-store';
import { MemoryApiTokenStore } from '../api-tokens/memory-api-token-store';
import type { JournalRecovery } from './journal';
import { Journal, Turns } from './journal';

/** A token as journaled: its dates as ISO 8601 text. */
interface StoredToken {
  readonly id: string;
  readonly name: string;
  readonly role: ApiTokenRole;
  readonly digest: string;
  readonly createdAt: string;
  readonly createdBy: string;
  readonly expiresAt: string | null;
  readonly revokedAt: string | null;
}

type TokenRecord =
  | { readonly type: 'create'; readonly token: StoredToken }
  | { readonly type: 'revoke'; readonly id: string; readonly at: string };

function dateOf(text: string | null): Date | null {
  return text === null ? null : new Date(text);
}

/**
 * API tokens kept in a journal file (`Journal`): each creation and revocation is flushed to the disk
 * before it is acknowledged, so a token handed out survives a crash, and a revoked one stays revoked.
 */
export class FileApiTokenStore implements ApiTokenStore {
  private readonly memory = new MemoryApiTokenStore();
  private loading: Promise<Journal> | undefined;
  private recovered: JournalRecovery | null = null;
  private readonly changes = new Turns();

  constructor(readonly file: string) {}

  /** What opening the journal found: null until it is open. */
  get recovery(): JournalRecovery | null {
    return this.recovered;
  }

  async migrate(): Promise<void> {
    await this.opened();
  }

  async create(record: ApiTokenRecord): Promise<void> {
    const journal = await this.opened();
    await this.changes.run(async () => {
      // Checked here as well as by the memory store: a refused token must not reach the journal.
      if (nameTaken(await this.memory.list(), record)) throw new ApiTokenNameTakenError(record.name);
      const token: StoredToken = {
        ...record,
        createdAt: record.createdAt.toISOString(),
        expiresAt: record.expiresAt?.toISOString() ?? null,
        revokedAt: record.revokedAt?.toISOString() ?? null,
      };
      await journal.append({ type: 'create', token } satisfies TokenRecord, { durable: true });
      await this.memory.create(record);
    });
  }

  async find(id: string): Promise<ApiTokenRecord | null> {
    await this.opened();
    return this.memory.find(id);
  }

  async list(): Promise<ApiTokenRecord[]> {
    await this.opened();
    return this.memory.list();
  }

  async revoke(id: string, at: Date): Promise<boolean> {
    const journal = await this.opened();
    return this.changes.run(async () => {
      const record = await this.memory.find(id);
      if (!record || record.revokedAt !== null) return false;
      await journal.append({ type: 'revoke', id, at: at.toISOString() } satisfies TokenRecord, {
        durable: true,
      });
      return this.memory.revoke(id, at);
    });
  }

  async close(): Promise<void> {
    const journal = await this.loading?.catch(() => null);
    await this.changes.idle();
    await journal?.close();
  }

  private opened(): Promise<Journal> {
    this.loading ??= this.replay();
    return this.loading;
  }

  private async replay(): Promise<Journal> {
    const { journal, records, recovery } = await Journal.open<TokenRecord>(this.file);
    for (const record of records)
      if (record.type === 'create') {
        const { token } = record;
        await this.memory.create({
          ...token,
          createdAt: new Date(token.createdAt),
          expiresAt: dateOf(token.expiresAt),
          revokedAt: dateOf(token.revokedAt),
        });
      } else await this.memory.revoke(record.id, new Date(record.at));
    this.recovered = recovery;
    return journal;
  }
}
