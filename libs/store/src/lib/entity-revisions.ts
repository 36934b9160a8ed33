import type { ParsedChangeSet } from '@policygen/engine';
import { entityWrites, SETTINGS } from './entity-rows';

/**
 * The revision each entity was last written at (its own ETag), by stored kind and key (see
 * `entity-rows.ts`: collections by name, `parameter`, `settings`). Deleted entities have none.
 */
export class EntityRevisions {
  private readonly byKind = new Map<string, Map<string, number>>();

  static fromRows(
    rows: Iterable<{ readonly kind: string; readonly key: string; readonly revision: number }>,
  ): EntityRevisions {
    const revisions = new EntityRevisions();
    for (const row of rows) revisions.keysOf(row.kind).set(row.key, row.revision);
    return revisions;
  }

  of(kind: string, key: string): number | undefined {
    return this.byKind.get(kind)?.get(key);
  }

  /** Moves the entities a committed change set writes to its revision; those it deletes have none. */
  record(revision: number, changeSet: ParsedChangeSet): void {
    for (const write of entityWrites(changeSet)) {
      const keys = this.keysOf(write.kind);
      for (const key of write.deletes) keys.delete(key);
      for (const row of write.upserts) keys.set(row.key, revision);
    }
    if (Object.keys(changeSet.upsert.settings).length > 0) this.keysOf(SETTINGS).set(SETTINGS, revision);
  }

  private keysOf(kind: string): Map<string, number> {
    let keys = this.byKind.get(kind);
    if (!keys) this.byKind.set(kind, (keys = new Map()));
    return keys;
  }
}
