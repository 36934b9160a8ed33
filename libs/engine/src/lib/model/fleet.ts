import { z } from 'zod';
import type { Json } from './json';
import { DEFAULT_MAX_BUNDLE_BYTES, hasControlCharacter, LIMITS } from '../validation/limits';

/** Ids of every kind: `^[A-Za-z0-9][A-Za-z0-9_.-]*$`, unique per kind (fleet-format.md). */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
/** First-level keys of a properties file, as the agent reads them (semantics.md §5). */
export const PROPERTY_NAME_PATTERN = /^[a-zA-Z0-9][a-zA-Z0-9_]*$/;

export const ORDERING_MODES = ['alphanumeric', 'title-hash', 'random'] as const;
export const POLICY_GENERATIONS = ['merged', 'separated', 'separated-with-parameters'] as const;
export const NODE_STATES = ['enabled', 'ignored', 'empty-policies'] as const;
export const RELATIONSHIP_KINDS = ['->', '~>'] as const;
/** `enforce` repairs; `audit` reports what it would change and changes nothing (semantics.md §5b). */
export const POLICY_MODES = ['enforce', 'audit'] as const;
/**
 * How a level's value of a property combines with the less specific levels' (Rudder's
 * `inheritMode`, semantics.md §5): objects `m`erge or `o`verride, arrays and strings `o`verride,
 * `a`ppend or `p`repend. `moo` is the default.
 */
export const INHERIT_MODE_PATTERN = /^[mo][oap][oap]$/;
export const DEFAULT_INHERIT_MODE = 'moo';
export const CRITERION_OPERATORS = [
  'eq',
  'neq',
  'regex',
  'exists',
  'notExists',
  'in',
  'lt',
  'le',
  'gt',
  'ge',
] as const;
/** CFEngine agent-bundle promise types, in normal order (seed 003). */
export const AGENT_PROMISE_TYPES = [
  'meta',
  'vars',
  'defaults',
  'classes',
  'users',
  'files',
  'packages',
  'guest_environments',
  'methods',
  'processes',
  'services',
  'commands',
  'storage',
  'databases',
  'reports',
] as const;

export type OrderingMode = (typeof ORDERING_MODES)[number];
export type PolicyGeneration = (typeof POLICY_GENERATIONS)[number];
export type CriterionOperator = (typeof CRITERION_OPERATORS)[number];
export type AgentPromiseType = (typeof AGENT_PROMISE_TYPES)[number];
export type PolicyMode = (typeof POLICY_MODES)[number];

const jsonValue: z.ZodType<Json> = z.lazy(() =>
  z.union([
    z.null(),
    z.boolean(),
    z.number(),
    z.string(),
    z.array(jsonValue),
    z.record(z.string(), jsonValue),
  ]),
);
const jsonObject = z.record(z.string(), jsonValue);
const id = z
  .string()
  .max(LIMITS.maxIdLength, { message: `must be at most ${LIMITS.maxIdLength} characters` })
  .regex(ID_PATTERN, { message: 'must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$' });
const idList = z.array(id);
/** A display name: any text but control characters (they break lines of logs, CSV and reports). */
const name = z
  .string()
  .max(LIMITS.maxNameLength, { message: `must be at most ${LIMITS.maxNameLength} characters` })
  .refine((text) => !hasControlCharacter(text), {
    message: 'must not contain control characters (U+0000–U+001F, U+007F)',
  });
const inheritMode = z.string().regex(INHERIT_MODE_PATTERN, {
  message:
    'must be 3 letters: objects m(erge) or o(verride), then arrays and strings o(verride), a(ppend) or p(repend), like moo',
});
/** Property name → its inheritance mode at this level (the level must set the property). */
const inheritModes = z
  .record(z.string(), inheritMode)
  .describe(
    "Property name -> how this level's value combines with the less specific levels' (Rudder's inheritMode): " +
      '3 letters for objects (m/o), arrays and strings (o/a/p); the mode holds for the levels below unless they set one.',
  );
const policyMode = z
  .enum(POLICY_MODES)
  .describe('enforce repairs; audit warns of what it would change and changes nothing');

const settingFields = {
  ordering: z.enum(ORDERING_MODES),
  orderingSeed: z.number().int(),
  /** The fleet's policy mode (semantics.md §5b). */
  policyMode: policyMode.describe('The global policy mode'),
  /** Whether nodes and directives may set a policy mode of their own; when false, the global one applies. */
  policyModeOverridable: z
    .boolean()
    .describe(
      'Whether nodes and directives may set their own policy mode; when false the global one applies everywhere',
    ),
  /** Bytes of one value (a parameter, a property, a fact) as JSON: beyond, it is refused at its path. */
  maxValueBytes: z
    .number()
    .int()
    .min(1_024)
    .max(16 * 1024 * 1024)
    .describe(
      'Largest value (parameter, property, fact) as JSON, in bytes; a larger one is refused at its JSON path',
    ),
  /** Bytes of a node's files: beyond, the node fails with BUNDLE_TOO_LARGE and keeps its last good tree. */
  maxBundleBytes: z
    .number()
    .int()
    .min(64 * 1024)
    .max(1024 * 1024 * 1024)
    .describe(
      'Largest node bundle (its files but the manifest and the generation time), in bytes; a larger one fails the node with BUNDLE_TOO_LARGE',
    ),
  /** Global parameter name → its inheritance mode. */
  parameterInheritModes: inheritModes.describe(
    "Global parameter name -> its inheritance mode (see a group's inheritModes)",
  ),
};

export const settingsSchema = z.strictObject({
  ordering: settingFields.ordering.default('alphanumeric'),
  orderingSeed: settingFields.orderingSeed.default(0),
  policyMode: settingFields.policyMode.default('enforce'),
  policyModeOverridable: settingFields.policyModeOverridable.default(true),
  parameterInheritModes: settingFields.parameterInheritModes.default({}),
  maxValueBytes: settingFields.maxValueBytes.default(LIMITS.maxValueBytes),
  maxBundleBytes: settingFields.maxBundleBytes.default(DEFAULT_MAX_BUNDLE_BYTES),
});

/** A change of settings: the settings it names, no defaults (the others keep their values). */
export const settingsChangeSchema = z.strictObject({
  ordering: settingFields.ordering.optional(),
  orderingSeed: settingFields.orderingSeed.optional(),
  policyMode: settingFields.policyMode.optional(),
  policyModeOverridable: settingFields.policyModeOverridable.optional(),
  parameterInheritModes: settingFields.parameterInheritModes.optional(),
  maxValueBytes: settingFields.maxValueBytes.optional(),
  maxBundleBytes: settingFields.maxBundleBytes.optional(),
});

const techniqueParameterSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: 'must be an identifier ([A-Za-z_][A-Za-z0-9_]*)' }),
  required: z.boolean().default(false),
  default: jsonValue.optional(),
});

/**
 * An attribute value of a promise: a string (quoted), a list of strings (an slist), or a call of a
 * body or function with string arguments, `{"call": "name", "args": [...]}` (rendered unquoted).
 */
const attributeValueSchema = z.union([
  z.string(),
  z.number(),
  z.boolean(),
  z.array(z.string()),
  z.strictObject({
    call: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
    args: z.array(z.string()).default([]),
  }),
]);

const promiseSchema = z.strictObject({
  type: z.enum(AGENT_PROMISE_TYPES),
  promiser: z.string(),
  attributes: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), attributeValueSchema).default({}),
});

export const techniqueSchema = z.strictObject({
  id,
  version: z.string().regex(/^[0-9A-Za-z][0-9A-Za-z_.-]*$/, { message: 'must be a version like 1.0' }),
  name,
  multiInstance: z.boolean().default(false),
  policyGeneration: z
    // Rudder's own name of the last mode is accepted as an alias.
    .enum([...POLICY_GENERATIONS, 'separated-with-param'])
    .default('merged')
    .transform((value): PolicyGeneration =>
      value === 'separated-with-param' ? 'separated-with-parameters' : value,
    ),
  parameters: z.array(techniqueParameterSchema).default([]),
  promises: z.array(promiseSchema).default([]),
  refresh: z.array(promiseSchema).default([]),
});

export const directiveSchema = z.strictObject({
  id,
  name,
  technique: id,
  techniqueVersion: z.string().optional(),
  priority: z
    .number()
    .int()
    .min(0, { message: 'must be from 0 (highest) to 10 (lowest)' })
    .max(10, { message: 'must be from 0 (highest) to 10 (lowest)' })
    .default(5),
  enabled: z.boolean().default(true),
  parameters: jsonObject.default({}),
  /** Absent: the node's mode, or the global one. */
  policyMode: policyMode
    .describe(
      "This directive's policy mode; absent: the node's, or the global one. A node in audit keeps it in audit",
    )
    .optional(),
  before: idList.default([]),
  require: idList.default([]),
  notify: idList.default([]),
  subscribe: idList.default([]),
});

export const relationshipSchema = z.strictObject({
  from: id,
  to: id,
  kind: z.enum(RELATIONSHIP_KINDS).default('->'),
});

export type Target =
  | string
  | readonly Target[]
  | { readonly or: readonly Target[] }
  | { readonly and: readonly Target[] }
  | { readonly include: Target; readonly exclude?: Target | undefined };

const targetString = z
  .string()
  .regex(/^(special:all|special:all_exceptPolicyServers|group:.+|policyServer:.+)$/, {
    message: 'must be special:all, special:all_exceptPolicyServers, group:<id> or policyServer:<id>',
  });
const targetSchema: z.ZodType<Target> = z.lazy(() =>
  z.union([
    targetString,
    z.array(targetSchema),
    z.strictObject({ or: z.array(targetSchema) }),
    z.strictObject({ and: z.array(targetSchema) }),
    z.strictObject({ include: targetSchema, exclude: targetSchema.optional() }),
  ]),
);

export const ruleSchema = z.strictObject({
  id,
  name,
  enabled: z.boolean().default(true),
  directives: idList.default([]),
  targets: targetSchema.default([]),
});

const criterionSchema = z.union([
  z.strictObject({ fact: z.string().min(1), op: z.enum(CRITERION_OPERATORS), value: jsonValue.optional() }),
  z.strictObject({
    property: z.string().min(1),
    op: z.enum(CRITERION_OPERATORS),
    value: jsonValue.optional(),
  }),
  z.strictObject({ group: id }),
]);

export const groupSchema = z.strictObject({
  id,
  name,
  enabled: z.boolean().default(true),
  nodes: idList.default([]),
  criteria: z
    .union([
      z.strictObject({ all: z.array(criterionSchema) }),
      z.strictObject({ any: z.array(criterionSchema) }),
    ])
    .optional(),
  properties: jsonObject.default({}),
  inheritModes: inheritModes.optional(),
});

export const nodeSchema = z.strictObject({
  id,
  // DNS's limit for a name.
  hostname: z
    .string()
    .min(1)
    .max(253, { message: 'must be at most 253 characters' })
    .refine((text) => !hasControlCharacter(text) && !/\s/.test(text), {
      message: 'must not contain spaces or control characters',
    }),
  policyServer: id.default('root'),
  state: z.enum(NODE_STATES).default('enabled'),
  facts: jsonObject.default({}),
  properties: jsonObject.default({}),
  inheritModes: inheritModes.optional(),
  /** Absent: the global mode. */
  policyMode: policyMode
    .describe(
      "This node's policy mode; absent: the global one. audit here holds every directive of the node in audit",
    )
    .optional(),
});

export const relaySchema = z.strictObject({ id, policyServer: id.default('root') });

export type Settings = z.output<typeof settingsSchema>;
export type Technique = z.output<typeof techniqueSchema>;
export type TechniqueParameter = Technique['parameters'][number];
export type PromiseTemplate = Technique['promises'][number];
export type AttributeValue = PromiseTemplate['attributes'][string];
export type Directive = z.output<typeof directiveSchema>;
export type Relationship = z.output<typeof relationshipSchema>;
export type Rule = z.output<typeof ruleSchema>;
export type Group = z.output<typeof groupSchema>;
export type Criterion = z.output<typeof criterionSchema>;
export type Criteria = NonNullable<Group['criteria']>;
export type FleetNode = z.output<typeof nodeSchema>;
export type Relay = z.output<typeof relaySchema>;

/** A validated fleet configuration, every default applied. */
export interface Fleet {
  readonly settings: Settings;
  readonly parameters: Readonly<Record<string, Json>>;
  readonly techniques: readonly Technique[];
  readonly directives: readonly Directive[];
  readonly relationships: readonly Relationship[];
  readonly rules: readonly Rule[];
  readonly groups: readonly Group[];
  readonly nodes: readonly FleetNode[];
  readonly relays: readonly Relay[];
}

/** The collections of a fleet file, in the order the format lists them. */
export const FLEET_COLLECTIONS = {
  techniques: techniqueSchema,
  directives: directiveSchema,
  relationships: relationshipSchema,
  rules: ruleSchema,
  groups: groupSchema,
  nodes: nodeSchema,
  relays: relaySchema,
} as const;
export type FleetCollection = keyof typeof FLEET_COLLECTIONS;
