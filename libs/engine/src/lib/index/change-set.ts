import type {
  Directive,
  FleetCollection,
  FleetNode,
  Group,
  Relationship,
  Relay,
  Rule,
  Settings,
  Technique,
} from '../model/fleet';
import type { Json } from '../model/json';

/** A change set as fleet-format.md describes it, every entity parsed and defaulted. */
export interface ParsedChangeSet {
  readonly upsert: {
    readonly techniques: readonly Technique[];
    readonly directives: readonly Directive[];
    readonly relationships: readonly Relationship[];
    readonly rules: readonly Rule[];
    readonly groups: readonly Group[];
    readonly nodes: readonly FleetNode[];
    readonly relays: readonly Relay[];
    readonly parameters: Readonly<Record<string, Json>>;
    readonly settings: Partial<Settings>;
  };
  readonly delete: {
    readonly techniques: readonly { readonly id: string; readonly version: string }[];
    readonly directives: readonly string[];
    readonly relationships: readonly Relationship[];
    readonly rules: readonly string[];
    readonly groups: readonly string[];
    readonly nodes: readonly string[];
    readonly relays: readonly string[];
    readonly parameters: readonly string[];
  };
}

export const ID_COLLECTIONS = [
  'directives',
  'rules',
  'groups',
  'nodes',
  'relays',
] as const satisfies readonly FleetCollection[];

export function relationshipKey(relationship: { from: string; to: string; kind: string }): string {
  return `${relationship.from} ${relationship.kind} ${relationship.to}`;
}

export function emptyChangeSet(): ParsedChangeSet {
  return {
    upsert: {
      techniques: [],
      directives: [],
      relationships: [],
      rules: [],
      groups: [],
      nodes: [],
      relays: [],
      parameters: {},
      settings: {},
    },
    delete: {
      techniques: [],
      directives: [],
      relationships: [],
      rules: [],
      groups: [],
      nodes: [],
      relays: [],
      parameters: [],
    },
  };
}
