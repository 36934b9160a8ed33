import { compareCodeUnits, relationshipKey } from '@policygen/engine';
import type { FleetCollection, FleetIndex, ID_COLLECTIONS } from '@policygen/engine';
import { COLLECTIONS } from '@policygen/store';
import type { EntityRef } from '../state/config-state.service';

/** The fields of an entity that name it, as they appear in its URL. */
export type EntityKey = Readonly<Record<string, string>>;

/** One collection of the fleet format, as the REST API serves it. */
export interface EntityKind {
  readonly collection: FleetCollection;
  /** `directive`, for messages. */
  readonly singular: string;
  /** The fields that make the key, in URL order: `/techniques/{id}/{version}`. */
  readonly keyFields: readonly string[];
  /** Every entity, in key order. */
  list(index: FleetIndex): readonly object[];
  find(index: FleetIndex, key: EntityKey): object | undefined;
  /** The entry of a change set's `delete` section that deletes the entity. */
  deletion(key: EntityKey): unknown;
}

const byCodeUnits =
  <T>(keyOf: (value: T) => string) =>
  (a: T, b: T): number =>
    compareCodeUnits(keyOf(a), keyOf(b));

function byId(collection: (typeof ID_COLLECTIONS)[number]): EntityKind {
  return {
    collection,
    singular: collection.slice(0, -1),
    keyFields: ['id'],
    list: (index) => [...index[collection].values()].sort(byCodeUnits((entity) => entity.id)),
    find: (index, key) => index[collection].get(key['id'] ?? ''),
    deletion: (key) => key['id'],
  };
}

const techniques: EntityKind = {
  collection: 'techniques',
  singular: 'technique',
  keyFields: ['id', 'version'],
  list: (index) =>
    [...index.techniques.values()]
      .flatMap((versions) => [...versions.values()])
      .sort((a, b) => compareCodeUnits(a.id, b.id) || compareCodeUnits(a.version, b.version)),
  find: (index, key) => index.techniques.get(key['id'] ?? '')?.get(key['version'] ?? ''),
  deletion: (key) => ({ id: key['id'], version: key['version'] }),
};

const relationships: EntityKind = {
  collection: 'relationships',
  singular: 'relationship',
  keyFields: ['from', 'kind', 'to'],
  list: (index) => [...index.relationships].sort(byCodeUnits(relationshipKey)),
  find: (index, key) =>
    index.relationships.find(
      (relationship) =>
        relationship.from === key['from'] &&
        relationship.kind === key['kind'] &&
        relationship.to === key['to'],
    ),
  deletion: (key) => ({ from: key['from'], kind: key['kind'], to: key['to'] }),
};

/** Every entity collection, in the order of the fleet format. */
export const ENTITY_KINDS: readonly EntityKind[] = [
  techniques,
  byId('directives'),
  relationships,
  byId('rules'),
  byId('groups'),
  byId('nodes'),
  byId('relays'),
];

/** The key of an entity (parsed or as sent), when its key fields are strings. */
export function keyOf(kind: EntityKind, entity: unknown): EntityKey | undefined {
  if (typeof entity !== 'object' || entity === null) return undefined;
  const record = entity as Record<string, unknown>;
  const key: Record<string, string> = {};
  for (const field of kind.keyFields) {
    const value = record[field];
    if (typeof value !== 'string') return undefined;
    key[field] = value;
  }
  return key;
}

/** `directive dns-default`, `technique gvd 1.0`, `relationship a -> b`. */
export function describe(kind: EntityKind, key: EntityKey): string {
  const name =
    kind.collection === 'relationships'
      ? relationshipKey({ from: key['from'] ?? '', kind: key['kind'] ?? '', to: key['to'] ?? '' })
      : kind.keyFields.map((field) => key[field]).join(' ');
  return `${kind.singular} ${name}`;
}

/** The entity as the store keeps it: what its own revision, its ETag, is looked up by. */
export function entityRef(kind: EntityKind, key: EntityKey): EntityRef {
  const storeKey = COLLECTIONS[kind.collection] as (key: EntityKey) => string;
  return { kind: kind.collection, key: storeKey(key), name: describe(kind, key) };
}
