import { ID_COLLECTIONS, relationshipKey } from '@policygen/engine';
import type { Fleet, FleetIndex } from '@policygen/engine';

/**
 * The change set that turns the configuration of `index` into `fleet`, as one commit: everything
 * in the fleet upserted, everything else deleted, settings and parameters replaced whole.
 */
export function replacementChangeSet(index: FleetIndex, fleet: Fleet): unknown {
  const { settings, parameters, ...collections } = fleet;
  const kept = <T>(values: readonly T[], keyOf: (value: T) => string): Set<string> =>
    new Set(values.map(keyOf));

  const techniqueKey = (technique: { id: string; version: string }): string =>
    `${technique.id}@${technique.version}`;
  const keptTechniques = kept(fleet.techniques, techniqueKey);
  const keptRelationships = kept(fleet.relationships, relationshipKey);
  const ids = Object.fromEntries(
    ID_COLLECTIONS.map((collection) => {
      const keep = kept<{ id: string }>(fleet[collection], (entity) => entity.id);
      return [collection, [...index[collection].keys()].filter((id) => !keep.has(id))];
    }),
  );

  return {
    upsert: { settings, parameters, ...collections },
    delete: {
      ...ids,
      techniques: [...index.techniques.values()]
        .flatMap((versions) => [...versions.values()])
        .filter((technique) => !keptTechniques.has(techniqueKey(technique)))
        .map(({ id, version }) => ({ id, version })),
      relationships: index.relationships.filter(
        (relationship) => !keptRelationships.has(relationshipKey(relationship)),
      ),
      parameters: Object.keys(index.parameters).filter((name) => !Object.hasOwn(parameters, name)),
    },
  };
}
