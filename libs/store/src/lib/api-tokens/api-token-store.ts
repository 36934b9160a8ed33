/** What an API token may do; see `@policygen/service-kit` for what each role allows. */
export type ApiTokenRole = 'reader' | 'editor' | 'admin';

/** An API token as it is kept: its secret only as a SHA-256 digest. */
export interface ApiTokenRecord {
  /** Public part of the token, its key: `pgt_<id>_<secret>`. */
  readonly id: string;
  readonly name: string;
  readonly role: ApiTokenRole;
  /** SHA-256 of the secret part, hex. */
  readonly digest: string;
  readonly createdAt: Date;
  /** The name of the token that created it. */
  readonly createdBy: string;
  readonly expiresAt: Date | null;
  readonly revokedAt: Date | null;
}

/** A name is already that of a token that is neither revoked nor expired. */
export class ApiTokenNameTakenError extends Error {
  override readonly name = 'ApiTokenNameTakenError';

  constructor(readonly tokenName: string) {
    super(`a token named "${tokenName}" exists`);
  }
}

/**
 * Where the config API keeps its tokens. Names are unique among the tokens in force, so that the
 * audit trail's "who" names one holder.
 */
export interface ApiTokenStore {
  migrate(): Promise<void>;
  /** Fails with `ApiTokenNameTakenError` when a token in force at `record.createdAt` has its name. */
  create(record: ApiTokenRecord): Promise<void>;
  find(id: string): Promise<ApiTokenRecord | null>;
  /** Every token, revoked and expired ones too, oldest first. */
  list(): Promise<ApiTokenRecord[]>;
  /** Revokes a token not yet revoked: false when there is none by that id. */
  revoke(id: string, at: Date): Promise<boolean>;
  close(): Promise<void>;
}

/** Whether a token is still valid at `at`. */
export function inForce(record: ApiTokenRecord, at: Date): boolean {
  return record.revokedAt === null && (record.expiresAt === null || record.expiresAt > at);
}

/** Whether a token in force when `record` is created has its name: then it cannot be created. */
export function nameTaken(records: Iterable<ApiTokenRecord>, record: ApiTokenRecord): boolean {
  for (const existing of records)
    if (existing.name === record.name && inForce(existing, record.createdAt)) return true;
  return false;
}
