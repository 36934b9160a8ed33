import type { Fleet, Relationship } from '../model/fleet';
import type { Json } from '../model/json';
import { compareCodeUnits } from '../text/compare';
import type { ParsedChangeSet } from './change-set';
import { ID_COLLECTIONS, relationshipKey } from './change-set';
import type { FleetIndex } from './fleet-index';
import { inKeyOrder } from './key-order';

/**
 * The change set that turns the configuration of `index` into `fleet`, a fleet `validateFleet`
 * accepted: everything in it upserted, everything else deleted, the settings and parameters
 * replaced whole. It comes out parsed, as `validateChangeSet` makes the same change set sent as JSON
 * (a property test): a fleet valid whole is a valid replacement of any configuration, so an import
 * needs no second parse of its 100,000 nodes. A relationship given twice is one (the store keeps
 * one row a relationship).
 */
export function replacementChangeSet(index: FleetIndex, fleet: Fleet): ParsedChangeSet {
  const { settings, parameters, ...collections } = fleet;
  const techniqueKey = (technique: { id: string; version: string }): string =>
    `${technique.id}@${technique.version}`;
  const keptTechniques = new Set(fleet.techniques.map(techniqueKey));
  const keptRelationships = new Set(fleet.relationships.map(relationshipKey));
  const deletedIds = Object.fromEntries(
    ID_COLLECTIONS.map((collection) => {
      const kept = new Set(fleet[collection].map((entity) => entity.id));
      return [collection, [...index[collection].keys()].filter((id) => !kept.has(id))];
    }),
  ) as Record<(typeof ID_COLLECTIONS)[number], string[]>;
  return {
    upsert: { settings, parameters, ...collections, relationships: uniqueRelationships(fleet.relationships) },
    delete: {
      ...deletedIds,
      techniques: [...index.techniques.values()]
        .flatMap((versions) => [...versions.values()])
        .filter((technique) => !keptTechniques.has(techniqueKey(technique)))
        .map(({ id, version }) => ({ id, version })),
      relationships: uniqueRelationships(index.relationships).filter(
        (relationship) => !keptRelationships.has(relationshipKey(relationship)),
      ),
      parameters: Object.keys(index.parameters).filter((name) => !Object.hasOwn(parameters, name)),
    },
  };
}

/**
 * The fleet as the store reads it back: in the order `FleetIndex.toFleet` gives (techniques by id
 * then version, relationships by key, the rest by id), parameters by name, each relationship once.
 * An index built from it is the one a reload from the store builds, to its maps' order.
 */
export function sortedFleet(fleet: Fleet): Fleet {
  const parameters: Record<string, Json> = {};
  for (const name of Object.keys(fleet.parameters).sort(compareCodeUnits))
    parameters[name] = fleet.parameters[name] as Json;
  return inKeyOrder({ ...fleet, parameters, relationships: uniqueRelationships(fleet.relationships) });
}

/** Each relationship once, the first of each key kept, in their order. */
function uniqueRelationships(relationships: readonly Relationship[]): Relationship[] {
  const seen = new Set<string>();
  return relationships.filter((relationship) => {
    const key = relationshipKey(relationship);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
