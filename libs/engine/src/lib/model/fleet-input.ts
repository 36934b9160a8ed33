import type { z } from 'zod';
import type {
  directiveSchema,
  groupSchema,
  nodeSchema,
  relationshipSchema,
  relaySchema,
  ruleSchema,
  settingsSchema,
  techniqueSchema,
} from './fleet';
import type { Json } from './json';

/**
 * The fleet file as written (fleet-format.md): the schemas' *input* shapes, so defaults may be
 * left out and the compiler still rejects a field the format does not have.
 */
export type TechniqueInput = z.input<typeof techniqueSchema>;
export type DirectiveInput = z.input<typeof directiveSchema>;
export type RelationshipInput = z.input<typeof relationshipSchema>;
export type RuleInput = z.input<typeof ruleSchema>;
export type GroupInput = z.input<typeof groupSchema>;
export type NodeInput = z.input<typeof nodeSchema>;
export type RelayInput = z.input<typeof relaySchema>;
export type SettingsInput = z.input<typeof settingsSchema>;

export interface FleetFile {
  settings: SettingsInput;
  parameters: Record<string, Json>;
  techniques: TechniqueInput[];
  directives: DirectiveInput[];
  relationships: RelationshipInput[];
  rules: RuleInput[];
  groups: GroupInput[];
  nodes: NodeInput[];
  relays: RelayInput[];
}

/** A group's dynamic criteria (`{all: [...]}` or `{any: [...]}`), as written. */
export type CriteriaInput = NonNullable<GroupInput['criteria']>;
export type CriterionInput = Extract<CriteriaInput, { all: unknown }>['all'][number];
