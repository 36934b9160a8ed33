import type { ParsedChangeSet } from '@policygen/engine';
import type { Collection } from './entity-rows';
import { entityWrites, PARAMETER } from './entity-rows';

/** What a change set changes, named as its sections name them. */
export type ChangeKind = Collection | 'parameters' | 'settings';

/** The entities of one kind a change set upserted and deleted, by key. */
export interface KindChanges {
  readonly upserted: readonly string[];
  readonly deleted: readonly string[];
}

/** How many entities of one kind a change set upserted and deleted. */
export interface KindCounts {
  readonly upserted: number;
  readonly deleted: number;
}

/** Only the kinds a change set touches are present. */
export type ChangedEntities = Readonly<Partial<Record<ChangeKind, KindChanges>>>;
export type ChangeCounts = Readonly<Partial<Record<ChangeKind, KindCounts>>>;

/**
 * The entities a change set touches, kind by kind, in the order it names them: techniques as
 * `id@version`, relationships as `from kind to`, parameters by name, settings by the names of the
 * settings it sets.
 */
export function changedEntities(changeSet: ParsedChangeSet): ChangedEntities {
  const changes: Partial<Record<ChangeKind, KindChanges>> = {};
  for (const write of entityWrites(changeSet)) {
    if (write.deletes.length === 0 && write.upserts.length === 0) continue;
    const kind = (write.kind === PARAMETER ? 'parameters' : write.kind) as ChangeKind;
    changes[kind] = { upserted: write.upserts.map((row) => row.key), deleted: [...write.deletes] };
  }
  const settings = Object.keys(changeSet.upsert.settings);
  if (settings.length > 0) changes.settings = { upserted: settings, deleted: [] };
  return changes;
}

export function changeCounts(changeSet: ParsedChangeSet): ChangeCounts {
  return Object.fromEntries(
    Object.entries(changedEntities(changeSet)).map(([kind, changes]) => [
      kind,
      { upserted: changes.upserted.length, deleted: changes.deleted.length },
    ]),
  );
}
