import { Client } from 'pg';
import { createClient } from 'redis';
import { startRestartablePostgres } from './providers/local-postgres';
import { startRestartableRedis } from './providers/local-redis';

/** The fault injection the chaos tests rely on: a store killed and started again, on its port and data. */
describe('restartable servers', () => {
  it('Redis killed and started again answers on its port, empty', async () => {
    const { url, server } = await startRestartableRedis();
    try {
      const client = createClient({ url });
      await client.connect();
      await client.set('k', 'v');
      await client.quit();
      await server.kill();
      expect(server.running).toBe(false);
      await server.start();
      const again = createClient({ url });
      await again.connect();
      expect(await again.get('k')).toBeNull();
      await again.quit();
    } finally {
      await server.close();
    }
  }, 60_000);

  it('a durable Postgres killed with SIGKILL comes back with every committed row', async () => {
    const { url, server } = await startRestartablePostgres({ durable: true });
    const query = async (sql: string): Promise<unknown[]> => {
      const client = new Client({ connectionString: url });
      await client.connect();
      try {
        return (await client.query(sql)).rows;
      } finally {
        await client.end();
      }
    };
    try {
      await query('CREATE TABLE t (n int)');
      await query('INSERT INTO t VALUES (1), (2)');
      await server.kill();
      await expect(query('SELECT 1')).rejects.toThrow();
      await server.start();
      expect(await query('SELECT n FROM t ORDER BY n')).toEqual([{ n: 1 }, { n: 2 }]);
    } finally {
      await server.close();
    }
  }, 120_000);
});
