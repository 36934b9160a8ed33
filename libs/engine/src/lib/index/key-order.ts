import type { Fleet } from '../model/fleet';
import { compareCodeUnits } from '../text/compare';
import { relationshipKey } from './change-set';

/** The fleet with every collection in key order (code units): techniques by id then version, relationships by key, the rest by id. */
export function inKeyOrder(fleet: Fleet): Fleet {
  const byId = <T extends { id: string }>(values: readonly T[]): T[] =>
    [...values].sort((a, b) => compareCodeUnits(a.id, b.id));
  return {
    settings: fleet.settings,
    parameters: fleet.parameters,
    techniques: [...fleet.techniques].sort(
      (a, b) => compareCodeUnits(a.id, b.id) || compareCodeUnits(a.version, b.version),
    ),
    directives: byId(fleet.directives),
    relationships: [...fleet.relationships].sort((a, b) =>
      compareCodeUnits(relationshipKey(a), relationshipKey(b)),
    ),
    rules: byId(fleet.rules),
    groups: byId(fleet.groups),
    nodes: byId(fleet.nodes),
    relays: byId(fleet.relays),
  };
}
