import type { Pool } from 'pg';
import type { DistributionConfirmedEvent, GenerationEvent, NodeFetchedEvent } from '@policygen/sdk';

/** A node failing now: its latest generation result is a failure. */
export interface FailingNode {
  readonly nodeId: string;
  readonly revision: number;
  readonly codes: string[];
}

/**
 * The audit trail's tables. Delivery is at least once and a consumer may restart anywhere, so
 * every write is an upsert guarded by revision: a duplicate rewrites the same row, an older event
 * never replaces a newer one. The guard sits in the statement itself, atomic with the write,
 * which an idempotency store beside the database could not be.
 */
export class AuditStore {
  private readonly schema: string;

  constructor(
    private readonly pool: Pool,
    schema: string,
  ) {
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema))
      throw new Error(`AUDIT_SCHEMA: a lowercase SQL identifier, not "${schema}"`);
    this.schema = schema;
  }

  async migrate(): Promise<void> {
    const s = this.schema;
    await this.pool.query(`
      CREATE SCHEMA IF NOT EXISTS ${s};
      CREATE TABLE IF NOT EXISTS ${s}.deliveries (
        node_id text NOT NULL,
        relay_id text NOT NULL,
        revision integer NOT NULL,
        hash text NOT NULL,
        committed_at timestamptz NOT NULL,
        confirmed_at timestamptz NOT NULL,
        lag_ms double precision NOT NULL,
        PRIMARY KEY (node_id, relay_id)
      );
      CREATE TABLE IF NOT EXISTS ${s}.fetches (
        node_id text NOT NULL,
        relay_id text NOT NULL,
        revision integer NOT NULL,
        hash text NOT NULL,
        fetched_at timestamptz NOT NULL,
        PRIMARY KEY (node_id, relay_id)
      );
      CREATE TABLE IF NOT EXISTS ${s}.node_results (
        node_id text PRIMARY KEY,
        revision integer NOT NULL,
        outcome text NOT NULL,
        hash text
      );
      CREATE TABLE IF NOT EXISTS ${s}.failures (
        node_id text NOT NULL,
        revision integer NOT NULL,
        codes text[] NOT NULL,
        errors jsonb NOT NULL,
        PRIMARY KEY (node_id, revision)
      );`);
  }

  /** A relay serves the node's bundle of this revision. */
  async recordDelivery(event: DistributionConfirmedEvent): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.schema}.deliveries AS d
         (node_id, relay_id, revision, hash, committed_at, confirmed_at, lag_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (node_id, relay_id) DO UPDATE SET
         revision = excluded.revision, hash = excluded.hash, committed_at = excluded.committed_at,
         confirmed_at = excluded.confirmed_at, lag_ms = excluded.lag_ms
       WHERE excluded.revision >= d.revision`,
      [
        event.nodeId,
        event.relayId,
        event.revision,
        event.hash,
        event.committedAt,
        event.confirmedAt,
        event.lagMs,
      ],
    );
  }

  /** The node fetched its bundle of this revision from its relay. */
  async recordFetch(event: NodeFetchedEvent): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${this.schema}.fetches AS f (node_id, relay_id, revision, hash, fetched_at)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (node_id, relay_id) DO UPDATE SET
         revision = excluded.revision, hash = excluded.hash, fetched_at = excluded.fetched_at
       WHERE excluded.revision >= f.revision`,
      [event.nodeId, event.relayId, event.revision, event.hash, event.fetchedAt],
    );
  }

  /**
   * What generating the node gave. A failure is kept in the history; the node's latest result says
   * whether it is failing now (a later revision generated, or unchanged, ends the failure).
   */
  async recordResult(event: GenerationEvent): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      if (event.outcome === 'failed')
        await client.query(
          `INSERT INTO ${this.schema}.failures (node_id, revision, codes, errors) VALUES ($1, $2, $3, $4)
           ON CONFLICT (node_id, revision) DO NOTHING`,
          [
            event.nodeId,
            event.revision,
            event.errors.map((error) => error.code),
            JSON.stringify(event.errors),
          ],
        );
      await client.query(
        `INSERT INTO ${this.schema}.node_results AS r (node_id, revision, outcome, hash) VALUES ($1, $2, $3, $4)
         ON CONFLICT (node_id) DO UPDATE SET revision = excluded.revision, outcome = excluded.outcome, hash = excluded.hash
         WHERE excluded.revision >= r.revision`,
        [event.nodeId, event.revision, event.outcome, event.hash],
      );
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      client.release();
    }
  }

  async failingNow(): Promise<FailingNode[]> {
    const { rows } = await this.pool.query<{ node_id: string; revision: number; codes: string[] }>(
      `SELECT r.node_id, r.revision, f.codes FROM ${this.schema}.node_results r
       JOIN ${this.schema}.failures f ON f.node_id = r.node_id AND f.revision = r.revision
       WHERE r.outcome = 'failed' ORDER BY r.node_id`,
    );
    return rows.map((row) => ({ nodeId: row.node_id, revision: row.revision, codes: row.codes }));
  }

  /** The revision each relay serves the node at. */
  async deliveredRevisions(nodeId: string): Promise<Record<string, number>> {
    const { rows } = await this.pool.query<{ relay_id: string; revision: number }>(
      `SELECT relay_id, revision FROM ${this.schema}.deliveries WHERE node_id = $1`,
      [nodeId],
    );
    return Object.fromEntries(rows.map((row) => [row.relay_id, row.revision]));
  }

  async latestResult(nodeId: string): Promise<{ revision: number; outcome: string } | undefined> {
    const { rows } = await this.pool.query<{ revision: number; outcome: string }>(
      `SELECT revision, outcome FROM ${this.schema}.node_results WHERE node_id = $1`,
      [nodeId],
    );
    return rows[0];
  }
}
