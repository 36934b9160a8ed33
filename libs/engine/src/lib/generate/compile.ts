import type { Fleet } from '../model/fleet';

/** A validated fleet with the indexes generation needs (memberships, lookups). Immutable. */
export interface CompiledFleet {
  readonly fleet: Fleet;
  /** Node ids, sorted. */
  readonly nodeIds: readonly string[];
}

export function compileFleet(_fleet: Fleet): CompiledFleet {
  throw new Error('not implemented yet');
}
