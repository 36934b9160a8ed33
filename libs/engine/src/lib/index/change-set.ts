import type { Fleet, FleetCollection, Relationship, Settings } from '../model/fleet';
import { FLEET_COLLECTIONS } from '../model/fleet';
import type { Json } from '../model/json';
import { mapList } from '../model/lists';

/** The collections whose entities are deleted by id alone. */
export const ID_COLLECTIONS = [
  'directives',
  'rules',
  'groups',
  'nodes',
  'relays',
] as const satisfies readonly FleetCollection[];

/** A change set as fleet-format.md describes it, every entity parsed and defaulted. */
export interface ParsedChangeSet {
  readonly upsert: { readonly [K in FleetCollection]: Fleet[K] } & {
    readonly parameters: Readonly<Record<string, Json>>;
    readonly settings: Partial<Settings>;
  };
  readonly delete: { readonly [K in (typeof ID_COLLECTIONS)[number]]: readonly string[] } & {
    readonly techniques: readonly { readonly id: string; readonly version: string }[];
    readonly relationships: readonly Relationship[];
    readonly parameters: readonly string[];
  };
}

export function relationshipKey(relationship: { from: string; to: string; kind: string }): string {
  return `${relationship.from} ${relationship.kind} ${relationship.to}`;
}

export function emptyChangeSet(): ParsedChangeSet {
  const none = <T>(keys: readonly string[]): T =>
    Object.fromEntries(mapList(keys, (key) => [key, []])) as unknown as T;
  return {
    upsert: {
      ...none<ParsedChangeSet['upsert']>(Object.keys(FLEET_COLLECTIONS)),
      parameters: {},
      settings: {},
    },
    delete: {
      ...none<ParsedChangeSet['delete']>([...ID_COLLECTIONS, 'techniques', 'relationships']),
      parameters: [],
    },
  };
}
