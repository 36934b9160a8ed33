import { Pool } from 'pg';
import type { Connection, EventConsumer, SdkLogger } from '@policygen/sdk';
import { TOPICS, createConsumer } from '@policygen/sdk';
import { AuditStore } from './audit-store';

export interface AuditTrailOptions {
  /** Kafka or `policygen start`: `connectionFromEnvironment()` reads it from the environment. */
  readonly connection: Connection;
  readonly databaseUrl: string;
  /** The Postgres schema of its tables (default `policygen_audit`). */
  readonly schema?: string;
  /** Its consumer group (default `policygen-audit-trail`); instances of one group share the work. */
  readonly groupId?: string;
  readonly logger?: SdkLogger;
}

export interface AuditTrail {
  readonly store: AuditStore;
  readonly consumer: EventConsumer;
  /** Commits what was handled and closes the database pool. */
  stop(): Promise<void>;
}

/**
 * Records, in Postgres, the revision each relay serves each node at (and each node's fetch), and
 * each generation failure, with the nodes failing now: an audit trail of the fleet's deliveries,
 * built on `@policygen/sdk` alone.
 */
export async function startAuditTrail(options: AuditTrailOptions): Promise<AuditTrail> {
  const pool = new Pool({ connectionString: options.databaseUrl, max: 8 });
  try {
    const store = new AuditStore(pool, options.schema ?? 'policygen_audit');
    await store.migrate();
    const consumer = createConsumer(options.connection, {
      groupId: options.groupId ?? 'policygen-audit-trail',
      // As many handlers as the pool has connections: more would only queue for one.
      concurrency: 8,
      retry: { attempts: 5, initialDelayMs: 200, maxDelayMs: 5_000 },
      ...(options.logger ? { logger: options.logger } : {}),
    })
      .subscribe(TOPICS.generationEvents, (event) => store.recordResult(event))
      .subscribe(TOPICS.distributionEvents, (event) =>
        event.type === 'distribution.confirmed' ? store.recordDelivery(event) : store.recordFetch(event),
      );
    await consumer.start();
    return {
      store,
      consumer,
      async stop() {
        await consumer.stop();
        await pool.end();
      },
    };
  } catch (error) {
    await pool.end();
    throw error;
  }
}
