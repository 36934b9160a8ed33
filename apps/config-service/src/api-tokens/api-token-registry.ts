import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import type { Authenticator, Principal, Role } from '@policygen/service-kit';
import { digestMatches, secretDigest, secretsEqual } from '@policygen/service-kit';
import type { ApiTokenRecord, ApiTokenStore } from '@policygen/store';
import { inForce } from '@policygen/store';

/** `pgt_<id>_<secret>`: the id finds the record, the secret (32 random bytes) proves the holder. */
const TOKEN_PATTERN = /^pgt_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

/** The principals of the tokens given by the environment, never stored. */
export const BOOTSTRAP_ADMIN = 'bootstrap-admin';
export const SERVICES = 'services';
export const RESERVED_TOKEN_NAMES: readonly string[] = [BOOTSTRAP_ADMIN, SERVICES];

/** Tokens the deployment gives in its environment rather than through the API. */
export interface EnvironmentTokens {
  /** `POLICYGEN_ADMIN_TOKEN`: an admin's, to create the others. */
  readonly admin?: string | null;
  /** `POLICYGEN_SERVICE_TOKEN`: the reader's the generator and the distribution-service present. */
  readonly services?: string | null;
}

/** An API token as the API shows it: never its secret, which only its creation answers. */
export interface ApiTokenView {
  readonly id: string;
  readonly name: string;
  readonly role: Role;
  readonly createdAt: string;
  readonly createdBy: string;
  readonly expiresAt: string | null;
  readonly revokedAt: string | null;
  readonly state: 'active' | 'expired' | 'revoked';
}

export interface NewApiToken {
  readonly name: string;
  readonly role: Role;
  readonly expiresAt: Date | null;
}

/**
 * The config API's credentials: tokens created through the API, kept as digests, and the ones the
 * environment gives. It is the config service's `Authenticator`.
 */
export class ApiTokenRegistry implements Authenticator {
  constructor(
    private readonly store: ApiTokenStore,
    private readonly environment: EnvironmentTokens,
    private readonly logger: Logger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async authenticate(token: string): Promise<Principal | null> {
    const { admin, services } = this.environment;
    // Both are compared whatever the first answer: the time taken says nothing about which matched.
    const isAdmin = typeof admin === 'string' && secretsEqual(token, admin);
    const isServices = typeof services === 'string' && secretsEqual(token, services);
    if (isAdmin) return { kind: 'api', name: BOOTSTRAP_ADMIN, role: 'admin', tokenId: BOOTSTRAP_ADMIN };
    if (isServices) return { kind: 'api', name: SERVICES, role: 'reader', tokenId: SERVICES };
    const parts = TOKEN_PATTERN.exec(token);
    if (!parts) return null;
    const [, id = '', secret = ''] = parts;
    const record = await this.store.find(id);
    if (!record || !digestMatches(secret, record.digest) || !inForce(record, this.now())) return null;
    return { kind: 'api', name: record.name, role: record.role, tokenId: record.id };
  }

  /** A new token: its secret is in the answer and nowhere else. */
  async create(request: NewApiToken, createdBy: string): Promise<ApiTokenView & { token: string }> {
    const id = randomBytes(8).toString('hex');
    const secret = randomBytes(32).toString('base64url');
    const record: ApiTokenRecord = {
      id,
      name: request.name,
      role: request.role,
      digest: secretDigest(secret),
      createdAt: this.now(),
      createdBy,
      expiresAt: request.expiresAt,
      revokedAt: null,
    };
    await this.store.create(record);
    this.logger.info(
      { tokenId: id, tokenName: record.name, role: record.role, expiresAt: record.expiresAt, createdBy },
      'API token created',
    );
    return { ...this.view(record), token: `pgt_${id}_${secret}` };
  }

  async list(): Promise<ApiTokenView[]> {
    return (await this.store.list()).map((record) => this.view(record));
  }

  async find(id: string): Promise<ApiTokenView | null> {
    const record = /^[0-9a-f]{16}$/.test(id) ? await this.store.find(id) : null;
    return record ? this.view(record) : null;
  }

  /** Revokes a token (again: nothing changes); null when there is no such token. */
  async revoke(id: string, revokedBy: string): Promise<ApiTokenView | null> {
    if (!(await this.find(id))) return null;
    if (await this.store.revoke(id, this.now()))
      this.logger.info({ tokenId: id, revokedBy }, 'API token revoked');
    return this.find(id);
  }

  close(): Promise<void> {
    return this.store.close();
  }

  /** `policygen_api_tokens{state}`: how many tokens there are in each state. */
  registerMetrics(registry: Registry): void {
    const list = (): Promise<ApiTokenView[]> => this.list();
    new Gauge({
      name: 'policygen_api_tokens',
      help: 'API tokens created through the API, by state (active, expired, revoked)',
      labelNames: ['state'],
      registers: [registry],
      async collect() {
        const counts = { active: 0, expired: 0, revoked: 0 };
        for (const token of await list()) counts[token.state] += 1;
        for (const [state, count] of Object.entries(counts)) this.set({ state }, count);
      },
    });
  }

  private view(record: ApiTokenRecord): ApiTokenView {
    const state = record.revokedAt !== null ? 'revoked' : inForce(record, this.now()) ? 'active' : 'expired';
    return {
      id: record.id,
      name: record.name,
      role: record.role,
      createdAt: record.createdAt.toISOString(),
      createdBy: record.createdBy,
      expiresAt: record.expiresAt?.toISOString() ?? null,
      revokedAt: record.revokedAt?.toISOString() ?? null,
      state,
    };
  }
}
