import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import { getTestInfrastructure } from '@policygen/testing-infra';
import { describeConfigStoreContract } from '../config-store-contract';
import { PostgresConfigStore } from './postgres-config-store';

/** The config store on the harness's real Postgres, each test in a schema of its own. */
describeConfigStoreContract('PostgresConfigStore', () => {
  const { databaseUrl } = getTestInfrastructure();
  const schema = `store_${randomBytes(6).toString('hex')}`;
  return {
    open: (options) => new PostgresConfigStore({ connectionString: databaseUrl, schema, ...options }),
    async dispose() {
      const pool = new Pool({ connectionString: databaseUrl });
      await pool.query(`drop schema if exists "${schema}" cascade`);
      await pool.end();
    },
  };
});
