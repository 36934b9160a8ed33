import type { Fleet, ParsedChangeSet, Settings } from '@policygen/engine';
import { settingsSchema } from '@policygen/engine';
import { compareCodeUnits, relationshipKey } from '@policygen/engine';
import type { ConfigChangeEvent } from '@policygen/events';

/**
 * How every config store lays the configuration out, whatever holds it: one row per entity, keyed
 * by its kind and its key, and what a change set writes to those rows. Shared by the Postgres
 * store and the in-memory one, so both keep, order and announce a configuration alike.
 */

/** Entity kinds as stored, and how each collection keys its entities. */
export const COLLECTIONS = {
  techniques: (entity: { id: string; version: string }) => `${entity.id}@${entity.version}`,
  directives: (entity: { id: string }) => entity.id,
  relationships: relationshipKey,
  rules: (entity: { id: string }) => entity.id,
  groups: (entity: { id: string }) => entity.id,
  nodes: (entity: { id: string }) => entity.id,
  relays: (entity: { id: string }) => entity.id,
} as const;
export type Collection = keyof typeof COLLECTIONS;
/** The kind of a global parameter's row, keyed by the parameter's name. */
export const PARAMETER = 'parameter';
/** The kind (and the key) of the one settings row. */
export const SETTINGS = 'settings';
/** Every setting at its default: what a stored row written before a setting existed lacks. */
export const DEFAULT_SETTINGS: Settings = settingsSchema.parse({});
/** The largest change set an event carries by default, as JSON bytes: under Kafka's 1 MiB limit. */
export const DEFAULT_MAX_EVENT_BYTES = 900 * 1024;

export interface EntityRow {
  readonly kind: string;
  readonly key: string;
  readonly body: unknown;
}

/** What a change set does to the rows of one kind: its deletes first, then its upserts. */
export interface KindWrites {
  readonly kind: string;
  readonly deletes: readonly string[];
  readonly upserts: readonly EntityRow[];
}

/**
 * The writes of a change set, kind by kind in the order they are applied (the collections, then
 * the parameters); settings are not among them, since they merge with the stored ones (`mergeSettings`).
 */
export function entityWrites(changeSet: ParsedChangeSet): KindWrites[] {
  const writes = (Object.keys(COLLECTIONS) as Collection[]).map((collection): KindWrites => {
    const keyOf = COLLECTIONS[collection] as (entity: unknown) => string;
    return {
      kind: collection,
      deletes: (changeSet.delete[collection] as readonly unknown[]).map((entry) =>
        typeof entry === 'string' ? entry : keyOf(entry),
      ),
      upserts: (changeSet.upsert[collection] as readonly unknown[]).map((entity) => ({
        kind: collection,
        key: keyOf(entity),
        body: entity,
      })),
    };
  });
  writes.push({
    kind: PARAMETER,
    deletes: changeSet.delete.parameters,
    upserts: Object.entries(changeSet.upsert.parameters).map(([name, value]) => ({
      kind: PARAMETER,
      key: name,
      body: value,
    })),
  });
  return writes;
}

/** The settings row after a change set, merged over the stored one; null when it sets nothing. */
export function mergeSettings(changeSet: ParsedChangeSet, stored: unknown): EntityRow | null {
  if (Object.keys(changeSet.upsert.settings).length === 0) return null;
  const settings = {
    ...DEFAULT_SETTINGS,
    ...(stored as Partial<Settings> | undefined),
    ...changeSet.upsert.settings,
  };
  return { kind: SETTINGS, key: SETTINGS, body: settings };
}

/**
 * The configuration the rows hold, as a fleet: every collection sorted as the engine's `toFleet`
 * sorts it (code-unit order, not a database collation), parameters by name. Sorts `rows` in place.
 */
export function fleetOfRows(rows: EntityRow[]): Fleet {
  rows.sort((a, b) => compareCodeUnits(sortKey(a), sortKey(b)));
  const byKind = new Map<string, unknown[]>();
  for (const row of rows) {
    const list = byKind.get(row.kind);
    if (list) list.push(row.body);
    else byKind.set(row.kind, [row.body]);
  }
  const parameters: Record<string, unknown> = {};
  for (const row of rows) if (row.kind === PARAMETER) parameters[row.key] = row.body;
  const settings: Settings = {
    ...DEFAULT_SETTINGS,
    ...(rows.find((row) => row.kind === SETTINGS)?.body as Partial<Settings> | undefined),
  };
  return {
    settings,
    parameters,
    ...Object.fromEntries(
      (Object.keys(COLLECTIONS) as Collection[]).map((collection) => [
        collection,
        byKind.get(collection) ?? [],
      ]),
    ),
  } as unknown as Fleet;
}

/** Techniques sort by id, then version; everything else by its key. */
function sortKey(row: { kind: string; key: string }): string {
  if (row.kind !== 'techniques') return `${row.kind}\u0000${row.key}`;
  const at = row.key.lastIndexOf('@');
  return `${row.kind}\u0000${row.key.slice(0, at)}\u0000${row.key.slice(at + 1)}`;
}

/**
 * The event announcing a commit. A change set larger than `maxEventBytes` (as JSON, `changeSetText`)
 * is left out of it, and the event says so: its consumers read a snapshot instead.
 */
export function changeEvent(commit: {
  readonly revision: number;
  readonly committedAt: Date;
  readonly changeSet: ParsedChangeSet;
  readonly changeSetText: string;
  readonly maxEventBytes: number;
}): ConfigChangeEvent {
  const { changeSet } = commit;
  const changeSetBytes = Buffer.byteLength(commit.changeSetText);
  const header = {
    schemaVersion: 1,
    type: 'config.change',
    revision: commit.revision,
    committedAt: commit.committedAt.toISOString(),
  } as const;
  return changeSetBytes > commit.maxEventBytes
    ? { ...header, changeSetOmitted: { bytes: changeSetBytes } }
    : { ...header, changeSet: { upsert: { ...changeSet.upsert }, delete: { ...changeSet.delete } } };
}
