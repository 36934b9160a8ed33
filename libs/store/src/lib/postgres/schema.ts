import type { ColumnType, Generated } from 'kysely';

/** The tables of the config store (see migrations.ts). */
export interface StoreDatabase {
  config_state: { id: number; revision: ColumnType<number, number, number> };
  entities: {
    kind: string;
    key: string;
    body: ColumnType<unknown, string, string>;
    revision: ColumnType<number, number, number>;
  };
  change_log: {
    revision: ColumnType<number, number, never>;
    committed_at: ColumnType<Date, Date, never>;
    author: ColumnType<string | null, string | null, never>;
    reason: ColumnType<string | null, string | null, never>;
    counts: ColumnType<unknown, string, never>;
    change_set: ColumnType<unknown, string, never>;
  };
  outbox: {
    id: Generated<number>;
    topic: string;
    key: string;
    payload: ColumnType<unknown, string, never>;
    created_at: ColumnType<Date, Date, never>;
    published_at: ColumnType<Date | null, never, Date>;
  };
}
