import { Client } from 'pg';
import { createClient, RESP_TYPES } from 'redis';
import { getTestInfrastructure } from './index';

const infra = getTestInfrastructure();

describe('Redis from the harness (node-redis)', () => {
  const redis = createClient({ url: infra.redisUrl });
  const prefix = `it:${process.pid}:${Date.now()}`;

  beforeAll(async () => {
    await redis.connect();
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(keys);
    await redis.close();
  });

  it('round-trips strings, binary values and hashes', async () => {
    await redis.set(`${prefix}:greeting`, 'héllo wörld');
    expect(await redis.get(`${prefix}:greeting`)).toBe('héllo wörld');

    const bytes = Buffer.from([0, 1, 2, 253, 254, 255]);
    await redis.set(`${prefix}:bytes`, bytes);
    const binary = redis.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
    expect(await binary.get(`${prefix}:bytes`)).toEqual(bytes);

    await redis.hSet(`${prefix}:node`, { bundle: 'sha256:abc', revision: '42' });
    expect(await redis.hGetAll(`${prefix}:node`)).toEqual({ bundle: 'sha256:abc', revision: '42' });
  });

  it('applies a MULTI transaction as one', async () => {
    const results = await redis
      .multi()
      .set(`${prefix}:a`, '1')
      .incrBy(`${prefix}:a`, 41)
      .get(`${prefix}:a`)
      .exec();
    expect(results).toEqual(['OK', 42, '42']);
  });
});

describe('Postgres from the harness (pg)', () => {
  const db = new Client({ connectionString: infra.databaseUrl });

  beforeAll(async () => {
    await db.connect();
  });
  afterAll(async () => {
    await db.query('DROP TABLE IF EXISTS harness_probe');
    await db.end();
  });

  it('commits a transaction, and a rolled-back one leaves nothing', async () => {
    await db.query('CREATE TABLE harness_probe (id integer PRIMARY KEY, label text NOT NULL)');

    await db.query('BEGIN');
    await db.query('INSERT INTO harness_probe VALUES ($1, $2), ($3, $4)', [1, 'one', 2, 'two']);
    await db.query('COMMIT');

    await db.query('BEGIN');
    await db.query('INSERT INTO harness_probe VALUES ($1, $2)', [3, 'three']);
    await db.query('ROLLBACK');

    const { rows } = await db.query<{ id: number; label: string }>(
      'SELECT id, label FROM harness_probe ORDER BY id',
    );
    expect(rows).toEqual([
      { id: 1, label: 'one' },
      { id: 2, label: 'two' },
    ]);
  });

  it('rejects a transaction that violates a constraint, atomically', async () => {
    await db.query('BEGIN');
    await db.query('INSERT INTO harness_probe VALUES ($1, $2)', [10, 'ten']);
    await expect(db.query('INSERT INTO harness_probe VALUES ($1, $2)', [1, 'duplicate'])).rejects.toThrow(
      /duplicate key/,
    );
    await db.query('ROLLBACK');
    const { rows } = await db.query('SELECT id FROM harness_probe WHERE id = 10');
    expect(rows).toEqual([]);
  });
});
