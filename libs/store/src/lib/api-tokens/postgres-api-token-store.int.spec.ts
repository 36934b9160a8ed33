import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import { getTestInfrastructure } from '@policygen/testing-infra';
import { describeApiTokenStoreContract } from './api-token-store-contract';
import { PostgresApiTokenStore } from './postgres-api-token-store';

/** API tokens on the harness's real Postgres, each test in a schema of its own. */
describeApiTokenStoreContract('PostgresApiTokenStore', () => {
  const { databaseUrl } = getTestInfrastructure();
  const schema = `tokens_${randomBytes(6).toString('hex')}`;
  return {
    open: () => new PostgresApiTokenStore({ connectionString: databaseUrl, schema }),
    async dispose() {
      const pool = new Pool({ connectionString: databaseUrl });
      await pool.query(`drop schema if exists "${schema}" cascade`);
      await pool.end();
    },
  };
});
