import type { PoolConfig } from 'pg';
import { Pool } from 'pg';

/** How long a request waits for a connection before it fails (and the API answers 503). */
const CONNECTION_TIMEOUT_MS = 5_000;

/**
 * A pg pool that outlives its server: when Postgres restarts or goes away, the connections'
 * errors are reported, not thrown (pg emits them as 'error' events, which would end the process),
 * the query that was running fails, and the next query connects again.
 */
export function resilientPool(config: PoolConfig, onConnectionError?: (error: Error) => void): Pool {
  const pool = new Pool({ connectionTimeoutMillis: CONNECTION_TIMEOUT_MS, ...config });
  const report = (error: Error): void => onConnectionError?.(error);
  // An idle connection's error reaches the pool; a checked-out one's only its client.
  pool.on('error', report);
  pool.on('connect', (client) => client.on('error', report));
  return pool;
}
