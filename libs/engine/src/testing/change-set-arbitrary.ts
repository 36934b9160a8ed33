import fc from 'fast-check';
import type { Fleet, Target } from '../lib/model/fleet';
import type { Json } from '../lib/model/json';
import type {
  ArbitraryFleetFile,
  DirectiveInput,
  GroupInput,
  NodeInput,
  RelationshipInput,
  RelayInput,
  RuleInput,
  TechniqueInput,
} from './fleet-arbitrary';
import { DIRECTIVE_NAMES, RULE_NAMES, TRICKY_VALUES } from './fleet-arbitrary';

/**
 * Random change sets (fleet-format.md, "Change sets") for property-based tests of the incremental
 * engine. A change set is drawn as a list of MUTATION DESCRIPTIONS — plain data, so fast-check
 * shrinks them — that `interpretChangeSet` applies to the current configuration: entities are picked
 * by position modulo their count (`node: 7` is the 7 mod n-th node, ids sorted), so one description
 * means something on any fleet. Most mutations keep the configuration valid (deletions can cascade
 * to what names the deleted entity); some break it on purpose, rarely, so that rejection is
 * exercised without dominating.
 */

type CriterionInput =
  NonNullable<GroupInput['criteria']> extends infer C ? (C extends { all: (infer I)[] } ? I : never) : never;
type PromiseInput = NonNullable<TechniqueInput['promises']>[number];
type TechniqueParameterInput = NonNullable<TechniqueInput['parameters']>[number];

const ORDERINGS = ['alphanumeric', 'title-hash', 'random'] as const;
const STATES = ['enabled', 'ignored', 'empty-policies'] as const;
const RELATIONS = ['before', 'require', 'notify', 'subscribe'] as const;
const GENERATIONS = ['merged', 'separated', 'separated-with-parameters', 'separated-with-param'] as const;
const PROPERTY_KEYS = ['dc', 'role', 'shared', 'team', 'policygen_ordering'] as const;
const PARAMETER_NAMES = ['dns', 'dc', 'shared', 'role', 'policygen_ordering'] as const;

const OPERATING_SYSTEMS = [
  { name: 'Debian', version: '12' },
  { name: 'Debian', version: '11' },
  { name: 'Ubuntu', version: '22.04' },
  { name: 'RHEL', version: '9.4' },
  { name: 'debian', version: '12.10' },
] as const;

/** Property and parameter values: scalars, lists, and objects nested enough to merge key by key. */
const PROPERTY_VALUES: readonly Json[] = [
  'a',
  'b',
  1,
  true,
  null,
  ['x', 'y'],
  { dns: '10.0.0.2' },
  { dns: '10.0.0.3', extra: true },
  { dns: { primary: '1.1.1.1' } },
  { nested: { k: 'v' } },
  { nested: { k: 'w', deep: { x: 1 } } },
  'with "quotes" and \\',
];

/** Directive parameter values: generation-time references first, they are what ties nodes to inputs. */
const REFERENCES = [
  '${rudder.param.dns}',
  '${rudder.param.shared | default = "none"}',
  '${rudder.param.dc | default = "-"}',
  '${node.properties[dc][dns]}',
  '${node.properties[dc][dns] | default = "8.8.8.8"}',
  '${node.properties[shared] | default = "x"}',
  '${node.properties[nested][k] | default = ""}',
  '${node.properties[policygen_ordering] | default = "none"}',
  '${rudder.node.policyserver.id}',
  '${rudder.node.hostname}',
  'dns is ${rudder.param.dns | default = "?"} at ${rudder.node.id}',
] as const;

const parameterValue: fc.Arbitrary<Json> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom<Json>(...REFERENCES) },
  { weight: 4, arbitrary: fc.constantFrom<Json>(...TRICKY_VALUES) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<Json>(42, ['a', '${rudder.node.id}'], { k: '${rudder.param.dns}' }),
  },
);

/** Criteria of dynamic groups: on facts (numbers, versions, text) and on the node's own properties. */
const CRITERIA: readonly CriterionInput[] = [
  { fact: 'os.name', op: 'eq', value: 'Debian' },
  { fact: 'os.name', op: 'in', value: ['Ubuntu', 'RHEL'] },
  { fact: 'os.name', op: 'regex', value: '^deb' },
  { fact: 'os.version', op: 'ge', value: '12' },
  { fact: 'arch', op: 'eq', value: 'x86_64' },
  { fact: 'arch', op: 'notExists' },
  { fact: 'ram', op: 'gt', value: 4 },
  { fact: 'ram', op: 'le', value: 8 },
  { fact: 'ram', op: 'lt', value: '16' },
  { fact: 'ram', op: 'eq', value: '8' },
  { fact: 'role', op: 'eq', value: 'web' },
  { property: 'dc', op: 'exists' },
  { property: 'dc.dns', op: 'eq', value: '10.0.0.2' },
  { property: 'role', op: 'in', value: ['a', 'b'] },
  { property: 'shared', op: 'neq', value: 'a' },
];
/** Drawn rarely: a broken regex, a missing value. */
const INVALID_CRITERIA: readonly CriterionInput[] = [
  { fact: 'os.name', op: 'regex', value: '(' },
  { fact: 'arch', op: 'eq' },
];

/** True with the given probability (percent): `rarely(5)` for the deliberately invalid variants. */
const rarely = (percent: number): fc.Arbitrary<boolean> =>
  fc.integer({ min: 0, max: 99 }).map((draw) => draw < percent);

const pick = fc.nat({ max: 1000 });

/**
 * Which referrers of a deleted entity are updated with it, one bit per kind of referrer: mostly
 * all of them (the deletion is accepted), sometimes some (each missed kind must be rejected).
 */
const cascade = (kinds: number): fc.Arbitrary<number> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constant((1 << kinds) - 1) },
    { weight: 1, arbitrary: fc.nat({ max: (1 << kinds) - 1 }) },
  );
const criterion = fc.oneof(
  { weight: 30, arbitrary: fc.constantFrom(...CRITERIA) },
  { weight: 1, arbitrary: fc.constantFrom(...INVALID_CRITERIA) },
);

const FACT_NAMES = ['os', 'arch', 'ram', 'role'] as const;
type FactName = (typeof FACT_NAMES)[number];

const factsBlueprint = fc.record({
  os: fc.nat({ max: OPERATING_SYSTEMS.length - 1 }),
  arch: fc.constantFrom('x86_64', 'aarch64', undefined),
  // Numbers mostly (an index over numbers answers the range criteria alone); rarely strings that
  // read as numbers, or do not, and a boolean, which the criteria must test one by one.
  ram: fc.oneof(
    { weight: 12, arbitrary: fc.constantFrom<Json | undefined>(1, 4, 8, 16, undefined) },
    { weight: 1, arbitrary: fc.constantFrom<Json | undefined>('8', '4.5', '16GB', true) },
  ),
  role: fc.constantFrom('web', 'db', undefined),
});

/** A property to set on a node or group: `policygen_ordering` gets a mode, rarely an invalid one. */
const propertyChange = fc.record({
  key: fc.oneof(
    { weight: 30, arbitrary: fc.constantFrom<string>(...PROPERTY_KEYS) },
    { weight: 1, arbitrary: fc.constant('_bad name') },
  ),
  value: fc.option(fc.constantFrom(...PROPERTY_VALUES), { nil: undefined, freq: 5 }),
  ordering: fc.oneof(
    { weight: 30, arbitrary: fc.constantFrom<string>(...ORDERINGS) },
    { weight: 1, arbitrary: fc.constant('bogus') },
  ),
});

const PROMISE_KINDS = ['vars', 'reports', 'files', 'commands', 'classes', 'slist'] as const;
const promisesBlueprint = fc.array(fc.record({ kind: fc.constantFrom(...PROMISE_KINDS), parameter: pick }), {
  minLength: 1,
  maxLength: 3,
});

/** Target leaves, resolved against the configuration: groups and policy servers by position. */
type TargetLeaf =
  | { leaf: 'all' }
  | { leaf: 'allButServers' }
  | { leaf: 'server'; server: number }
  | { leaf: 'group'; group: number }
  | { leaf: 'unknownGroup' };
export type TargetBlueprint =
  | TargetLeaf
  | { list: TargetBlueprint[] }
  | { or: TargetBlueprint[] }
  | { and: TargetBlueprint[] }
  | { include: TargetBlueprint; exclude?: TargetBlueprint };

const targetLeaf: fc.Arbitrary<TargetLeaf> = fc.oneof(
  { weight: 15, arbitrary: fc.constant<TargetLeaf>({ leaf: 'all' }) },
  { weight: 15, arbitrary: fc.constant<TargetLeaf>({ leaf: 'allButServers' }) },
  { weight: 15, arbitrary: pick.map((server): TargetLeaf => ({ leaf: 'server', server })) },
  { weight: 40, arbitrary: pick.map((group): TargetLeaf => ({ leaf: 'group', group })) },
  { weight: 1, arbitrary: fc.constant<TargetLeaf>({ leaf: 'unknownGroup' }) },
);

const targetBlueprint: fc.Arbitrary<TargetBlueprint> = fc.letrec<{ target: TargetBlueprint }>((tie) => ({
  target: fc.oneof(
    { maxDepth: 3, depthSize: 'small', withCrossShrink: true },
    targetLeaf,
    fc.record({ list: fc.array(tie('target'), { maxLength: 3 }) }),
    fc.record({ or: fc.array(tie('target'), { maxLength: 3 }) }),
    fc.record({ and: fc.array(tie('target'), { maxLength: 3 }) }),
    fc.record({ include: tie('target'), exclude: tie('target') }, { requiredKeys: ['include'] }),
  ),
})).target;

const groupBody = fc.record({
  mode: fc.constantFrom('all' as const, 'any' as const),
  criteria: fc.array(criterion, { maxLength: 3 }),
  parent: fc.option(pick, { nil: undefined, freq: 2 }),
  nodes: fc.array(pick, { maxLength: 2 }),
  properties: fc.array(propertyChange, { maxLength: 2 }),
  enabled: rarely(85),
});

/** One change of the configuration, interpreted against it by `interpretChangeSet`. */
export type Mutation =
  | { kind: 'nodeFacts'; node: number; facts: FactsBlueprint; only: FactName | undefined }
  | { kind: 'nodeProperty'; node: number; property: PropertyChange }
  | { kind: 'nodeState'; node: number; state: (typeof STATES)[number] }
  | { kind: 'nodePolicyServer'; node: number; server: number; unknown: boolean }
  | { kind: 'nodeHostname'; node: number; hostname: string }
  | {
      kind: 'nodeAdd';
      id: number;
      facts: FactsBlueprint;
      properties: PropertyChange[];
      state: (typeof STATES)[number];
      server: number;
      staticIn: number | undefined;
    }
  | { kind: 'nodeDelete'; node: number; cascade: boolean }
  | {
      kind: 'directiveParameter';
      directive: number;
      parameter: number;
      value: Json | undefined;
      undeclared: boolean;
    }
  | { kind: 'directivePriority'; directive: number; priority: number }
  | { kind: 'directiveEnabled'; directive: number }
  | { kind: 'directiveName'; directive: number; name: string }
  | { kind: 'directiveVersion'; directive: number; version: number; drop: boolean }
  | { kind: 'directiveTechnique'; directive: number; technique: number }
  | {
      kind: 'directiveMeta';
      directive: number;
      relation: (typeof RELATIONS)[number];
      target: number;
      remove: boolean;
    }
  | {
      kind: 'directiveAdd';
      id: number;
      technique: number;
      name: string;
      priority: number | undefined;
      values: (Json | undefined)[];
      attachTo: number | undefined;
    }
  | { kind: 'directiveDelete'; directive: number; cascade: number }
  | {
      kind: 'techniqueEdit';
      technique: number;
      promises: PromisesBlueprint | undefined;
      defaultOf: number;
      newDefault: Json | undefined;
      flipRequired: boolean;
      flipMultiInstance: boolean;
      generation: (typeof GENERATIONS)[number] | undefined;
      addParameter: boolean;
      dropParameter: boolean;
      refresh: PromisesBlueprint | undefined;
      badTemplate: boolean;
    }
  | {
      kind: 'techniqueNewVersion';
      technique: number;
      version: number;
      pin: boolean;
      promises: PromisesBlueprint;
      multiInstance: boolean;
      generation: (typeof GENERATIONS)[number];
    }
  | { kind: 'techniqueDeleteVersion'; technique: number; repoint: boolean }
  | {
      kind: 'techniqueAdd';
      id: number;
      promises: PromisesBlueprint;
      multiInstance: boolean;
      parameters: number;
    }
  | { kind: 'ruleName'; rule: number; name: string }
  | { kind: 'ruleEnabled'; rule: number }
  | { kind: 'ruleDirectives'; rule: number; directives: number[]; unknown: boolean }
  | { kind: 'ruleTargets'; rule: number; target: TargetBlueprint }
  | {
      kind: 'ruleAdd';
      id: number;
      name: string;
      directives: number[];
      target: TargetBlueprint;
      enabled: boolean;
    }
  | { kind: 'ruleDelete'; rule: number }
  | {
      kind: 'groupCriteria';
      group: number;
      mode: 'all' | 'any';
      criteria: CriterionInput[];
      keepParents: boolean;
      edit: 'replace' | 'append' | 'drop' | 'rotate';
    }
  | { kind: 'groupNodes'; group: number; nodes: number[] }
  | { kind: 'groupProperty'; group: number; property: PropertyChange }
  | { kind: 'groupEnabled'; group: number }
  | { kind: 'groupParent'; group: number; parent: number | undefined }
  | { kind: 'groupAdd'; id: number; body: GroupBody }
  | { kind: 'groupDelete'; group: number; cascade: number }
  | { kind: 'parameterSet'; name: string; value: Json; ordering: string }
  | { kind: 'parameterDelete'; name: number }
  | {
      kind: 'settings';
      ordering: (typeof ORDERINGS)[number] | undefined;
      orderingSeed: number | undefined;
      policyMode: 'audit' | 'enforce' | undefined;
      policyModeOverridable: boolean | undefined;
    }
  | { kind: 'policyMode'; level: 'node' | 'directive'; target: number; mode: 'audit' | 'enforce' | undefined }
  | { kind: 'inheritMode'; level: 'node' | 'group' | 'parameter'; target: number; mode: string | undefined }
  | { kind: 'relationshipAdd'; from: number; to: number; arrow: '->' | '~>' }
  | { kind: 'relationshipDelete'; relationship: number }
  | { kind: 'relayAdd'; id: number; nodeId: boolean; parent: number; root: boolean }
  | { kind: 'relayDelete'; relay: number; cascade: number }
  | { kind: 'relayReparent'; relay: number; parent: number }
  | { kind: 'malformed'; variant: MalformedVariant };

export type MutationKind = Mutation['kind'];
type FactsBlueprint = typeof factsBlueprint extends fc.Arbitrary<infer T> ? T : never;
type PropertyChange = typeof propertyChange extends fc.Arbitrary<infer T> ? T : never;
type PromisesBlueprint = typeof promisesBlueprint extends fc.Arbitrary<infer T> ? T : never;
type GroupBody = typeof groupBody extends fc.Arbitrary<infer T> ? T : never;

/** Errors of the change set itself, whatever the configuration it would give. */
export const MALFORMED_VARIANTS = [
  'deleteUnknown',
  'unknownSection',
  'upsertAndDelete',
  'notAnArray',
  'duplicateUpsert',
] as const;
export type MalformedVariant = (typeof MALFORMED_VARIANTS)[number];

const m = <K extends MutationKind>(kind: K) => kind;

/** Every kind but `malformed`, with the weight it is drawn with. */
const MUTATIONS: readonly { weight: number; arbitrary: fc.Arbitrary<Mutation> }[] = [
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant(m('nodeFacts')),
      node: pick,
      facts: factsBlueprint,
      only: fc.option(fc.constantFrom(...FACT_NAMES), { nil: undefined }),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant(m('nodeProperty')), node: pick, property: propertyChange }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant(m('nodeState')),
      node: pick,
      state: fc.constantFrom(...STATES),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant(m('nodePolicyServer')),
      node: pick,
      server: pick,
      unknown: rarely(3),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant(m('nodeHostname')),
      node: pick,
      hostname: fc.oneof(
        { weight: 20, arbitrary: fc.constantFrom('web.example.com', 'db "quoted"', 'é.example.com') },
        { weight: 1, arbitrary: fc.constant('') },
      ),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant(m('nodeAdd')),
      id: fc.nat({ max: 9 }),
      facts: factsBlueprint,
      properties: fc.array(propertyChange, { maxLength: 2 }),
      state: fc.constantFrom('enabled', 'enabled', 'enabled', 'ignored', 'empty-policies'),
      server: pick,
      staticIn: fc.option(pick, { nil: undefined }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant(m('nodeDelete')), node: pick, cascade: rarely(75) }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant(m('directiveParameter')),
      directive: pick,
      parameter: pick,
      value: fc.option(parameterValue, { nil: undefined, freq: 6 }),
      undeclared: rarely(3),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant(m('directivePriority')),
      directive: pick,
      priority: fc.oneof(
        { weight: 40, arbitrary: fc.integer({ min: 0, max: 10 }) },
        { weight: 1, arbitrary: fc.constant(11) },
      ),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant(m('directiveEnabled')), directive: pick }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant(m('directiveName')),
      directive: pick,
      name: fc.constantFrom<string>(...DIRECTIVE_NAMES),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant(m('directiveVersion')),
      directive: pick,
      version: pick,
      drop: rarely(15),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant(m('directiveTechnique')), directive: pick, technique: pick }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant(m('directiveMeta')),
      directive: pick,
      relation: fc.constantFrom(...RELATIONS),
      target: pick,
      remove: rarely(30),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant(m('directiveAdd')),
      id: fc.nat({ max: 5 }),
      technique: pick,
      name: fc.constantFrom<string>(...DIRECTIVE_NAMES),
      priority: fc.option(fc.integer({ min: 0, max: 10 }), { nil: undefined }),
      values: fc.array(fc.option(parameterValue, { nil: undefined, freq: 4 }), {
        minLength: 3,
        maxLength: 3,
      }),
      attachTo: fc.option(pick, { nil: undefined, freq: 4 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant(m('directiveDelete')), directive: pick, cascade: cascade(3) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant(m('techniqueEdit')),
      technique: pick,
      promises: fc.option(promisesBlueprint, { nil: undefined }),
      defaultOf: pick,
      newDefault: fc.option(parameterValue, { nil: undefined }),
      flipRequired: rarely(25),
      flipMultiInstance: rarely(20),
      generation: fc.option(fc.constantFrom(...GENERATIONS), { nil: undefined, freq: 3 }),
      addParameter: rarely(15),
      dropParameter: rarely(10),
      refresh: fc.option(promisesBlueprint, { nil: undefined, freq: 3 }),
      badTemplate: rarely(3),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant(m('techniqueNewVersion')),
      technique: pick,
      version: fc.integer({ min: 2, max: 4 }),
      pin: rarely(85),
      promises: promisesBlueprint,
      multiInstance: fc.boolean(),
      generation: fc.constantFrom(...GENERATIONS),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant(m('techniqueDeleteVersion')),
      technique: pick,
      repoint: rarely(85),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant(m('techniqueAdd')),
      id: fc.nat({ max: 3 }),
      promises: promisesBlueprint,
      multiInstance: fc.boolean(),
      parameters: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant(m('ruleName')),
      rule: pick,
      name: fc.constantFrom<string>(...RULE_NAMES),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant(m('ruleEnabled')), rule: pick }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant(m('ruleDirectives')),
      rule: pick,
      directives: fc.array(pick, { maxLength: 4 }),
      unknown: rarely(3),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant(m('ruleTargets')), rule: pick, target: targetBlueprint }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant(m('ruleAdd')),
      id: fc.nat({ max: 4 }),
      name: fc.constantFrom<string>(...RULE_NAMES),
      directives: fc.array(pick, { maxLength: 4 }),
      target: targetBlueprint,
      enabled: rarely(90),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant(m('ruleDelete')), rule: pick }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant(m('groupCriteria')),
      group: pick,
      mode: fc.constantFrom('all' as const, 'any' as const),
      criteria: fc.array(criterion, { maxLength: 3 }),
      keepParents: rarely(70),
      edit: fc.constantFrom('replace' as const, 'append' as const, 'drop' as const, 'rotate' as const),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant(m('groupNodes')),
      group: pick,
      nodes: fc.array(pick, { maxLength: 3 }),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant(m('groupProperty')), group: pick, property: propertyChange }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant(m('groupEnabled')), group: pick }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant(m('groupParent')),
      group: pick,
      parent: fc.option(pick, { nil: undefined, freq: 4 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant(m('groupAdd')), id: fc.nat({ max: 4 }), body: groupBody }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant(m('groupDelete')), group: pick, cascade: cascade(2) }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant(m('parameterSet')),
      name: fc.constantFrom<string>(...PARAMETER_NAMES),
      value: fc.constantFrom(...PROPERTY_VALUES),
      ordering: fc.oneof(
        { weight: 30, arbitrary: fc.constantFrom<string>(...ORDERINGS) },
        { weight: 1, arbitrary: fc.constant('bogus') },
      ),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant(m('parameterDelete')), name: pick }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant(m('settings')),
      ordering: fc.option(fc.constantFrom(...ORDERINGS), { nil: undefined }),
      orderingSeed: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }),
      policyMode: fc.option(fc.constantFrom('audit' as const, 'enforce' as const), { nil: undefined }),
      policyModeOverridable: fc.option(fc.boolean(), { nil: undefined }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant(m('policyMode')),
      level: fc.constantFrom('node' as const, 'directive' as const),
      target: pick,
      mode: fc.option(fc.constantFrom('audit' as const, 'enforce' as const), { nil: undefined }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant(m('inheritMode')),
      level: fc.constantFrom('node' as const, 'group' as const, 'parameter' as const),
      target: pick,
      mode: fc.option(fc.constantFrom('moo', 'mao', 'mpo', 'ooo', 'moa', 'mop'), { nil: undefined }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant(m('relationshipAdd')),
      from: pick,
      to: pick,
      arrow: fc.constantFrom('->' as const, '~>' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant(m('relationshipDelete')), relationship: pick }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant(m('relayAdd')),
      id: fc.nat({ max: 2 }),
      nodeId: fc.boolean(),
      parent: pick,
      root: rarely(2),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant(m('relayDelete')), relay: pick, cascade: cascade(3) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant(m('relayReparent')), relay: pick, parent: pick }) },
];

/** Every mutation kind the arbitrary draws, `malformed` included. */
export const MUTATION_KINDS: readonly MutationKind[] = [
  'nodeFacts',
  'nodeProperty',
  'nodeState',
  'nodePolicyServer',
  'nodeHostname',
  'nodeAdd',
  'nodeDelete',
  'directiveParameter',
  'directivePriority',
  'directiveEnabled',
  'directiveName',
  'directiveVersion',
  'directiveTechnique',
  'directiveMeta',
  'directiveAdd',
  'directiveDelete',
  'techniqueEdit',
  'techniqueNewVersion',
  'techniqueDeleteVersion',
  'techniqueAdd',
  'ruleName',
  'ruleEnabled',
  'ruleDirectives',
  'ruleTargets',
  'ruleAdd',
  'ruleDelete',
  'groupCriteria',
  'groupNodes',
  'groupProperty',
  'groupEnabled',
  'groupParent',
  'groupAdd',
  'groupDelete',
  'parameterSet',
  'parameterDelete',
  'settings',
  'relationshipAdd',
  'relationshipDelete',
  'relayAdd',
  'relayDelete',
  'relayReparent',
  'malformed',
];

const malformed: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constant(m('malformed')),
  variant: fc.constantFrom(...MALFORMED_VARIANTS),
});

export interface ChangeSetArbitraryOptions {
  /** Mutations per change set (default 1–4). */
  readonly maxMutations?: number;
  /** Weight of malformed change sets among the mutations (default 1, against a total near 110). */
  readonly malformedWeight?: number;
}

/** The descriptions of one change set. */
export function arbitraryMutations(options: ChangeSetArbitraryOptions = {}): fc.Arbitrary<Mutation[]> {
  const mutation = fc.oneof(...MUTATIONS, { weight: options.malformedWeight ?? 1, arbitrary: malformed });
  // Most change sets change one or two things; some change several entities at once.
  return fc.array(mutation, { minLength: 1, maxLength: options.maxMutations ?? 4, size: 'small' });
}

/** A change set file as `GenerationEngine.apply` takes it. */
export interface ChangeSetFile {
  upsert?: Record<string, unknown>;
  delete?: Record<string, unknown>;
  [field: string]: unknown;
}

export interface InterpretedChangeSet {
  readonly changeSet: ChangeSetFile;
  /** The configuration the change set gives, as a fleet file (valid or not). */
  readonly resulting: ArbitraryFleetFile;
  /** False when the change set is wrong in itself (rejected whatever the resulting configuration). */
  readonly wellFormed: boolean;
  /** The kinds of the mutations that changed something (a mutation with nothing to pick does nothing). */
  readonly effective: readonly MutationKind[];
}

const COLLECTIONS = [
  'techniques',
  'directives',
  'relationships',
  'rules',
  'groups',
  'nodes',
  'relays',
] as const;
type Collection = (typeof COLLECTIONS)[number];
type EntityOf = {
  techniques: TechniqueInput;
  directives: DirectiveInput;
  relationships: RelationshipInput;
  rules: RuleInput;
  groups: GroupInput;
  nodes: NodeInput;
  relays: RelayInput;
};

function keyOf(collection: Collection, entity: object): string {
  if (collection === 'techniques') {
    const technique = entity as TechniqueInput;
    return `${technique.id}@${technique.version}`;
  }
  if (collection === 'relationships') {
    const relationship = entity as RelationshipInput;
    return `${relationship.from} ${relationship.kind ?? '->'} ${relationship.to}`;
  }
  return (entity as { id: string }).id;
}

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function at<T>(list: readonly T[], draw: number): T | undefined {
  return list.length === 0 ? undefined : list[draw % list.length];
}

/**
 * The fleet being changed, and what was touched: the change set upserts every touched entity still
 * there, and deletes every touched entity that was there before and is gone.
 */
class Working {
  readonly file: ArbitraryFleetFile;
  private readonly before: Record<Collection, Set<string>>;
  private readonly parametersBefore: Set<string>;
  private readonly touched: Record<Collection, string[]>;
  private readonly touchedParameters = new Set<string>();
  private readonly touchedSettings = new Set<SettingField>();

  constructor(fleet: Fleet) {
    this.file = clone(fleet) as unknown as ArbitraryFleetFile;
    this.before = {} as Record<Collection, Set<string>>;
    this.touched = {} as Record<Collection, string[]>;
    for (const collection of COLLECTIONS) {
      this.before[collection] = new Set(this.file[collection].map((entity) => keyOf(collection, entity)));
      this.touched[collection] = [];
    }
    this.parametersBefore = new Set(Object.keys(this.file.parameters));
  }

  list<C extends Collection>(collection: C): EntityOf[C][] {
    return this.file[collection] as EntityOf[C][];
  }

  /** Marks an entity changed in place (its key unchanged). */
  touch(collection: Collection, entity: object): void {
    const key = keyOf(collection, entity);
    if (!this.touched[collection].includes(key)) this.touched[collection].push(key);
  }

  upsert<C extends Collection>(collection: C, entity: EntityOf[C]): void {
    const list = this.list(collection);
    const key = keyOf(collection, entity);
    const index = list.findIndex((existing) => keyOf(collection, existing) === key);
    if (index >= 0) list[index] = entity;
    else list.push(entity);
    this.touch(collection, entity);
  }

  remove(collection: Collection, entity: object): void {
    const key = keyOf(collection, entity);
    // Every copy: a fleet file may list one relationship twice.
    const list = this.list(collection) as object[];
    for (let index = list.length - 1; index >= 0; index--)
      if (keyOf(collection, list[index] as object) === key) list.splice(index, 1);
    if (!this.touched[collection].includes(key)) this.touched[collection].push(key);
  }

  setParameter(name: string, value: Json | undefined): void {
    if (value === undefined) delete this.file.parameters[name];
    else this.file.parameters[name] = value;
    this.touchedParameters.add(name);
  }

  setSetting(field: SettingField, value: string | number | boolean | Record<string, string>): void {
    this.file.settings = { ...this.file.settings, [field]: value } as NonNullable<
      ArbitraryFleetFile['settings']
    >;
    this.touchedSettings.add(field);
  }

  changeSet(): ChangeSetFile {
    const upsert: Record<string, unknown> = {};
    const deletions: Record<string, unknown> = {};
    for (const collection of COLLECTIONS) {
      const current = new Map(
        this.list(collection).map((entity) => [keyOf(collection, entity), entity] as const),
      );
      const upserts: object[] = [];
      const deletes: unknown[] = [];
      for (const key of this.touched[collection]) {
        const entity = current.get(key);
        if (entity) upserts.push(clone(entity));
        else if (this.before[collection].has(key)) deletes.push(deletionKey(collection, key));
      }
      if (upserts.length > 0) upsert[collection] = upserts;
      if (deletes.length > 0) deletions[collection] = deletes;
    }
    const parameters: Record<string, Json> = {};
    const deletedParameters: string[] = [];
    for (const name of this.touchedParameters) {
      const value = this.file.parameters[name];
      if (value !== undefined) parameters[name] = clone(value);
      else if (this.parametersBefore.has(name)) deletedParameters.push(name);
    }
    if (Object.keys(parameters).length > 0) upsert['parameters'] = parameters;
    if (deletedParameters.length > 0) deletions['parameters'] = deletedParameters;
    if (this.touchedSettings.size > 0) {
      const settings = this.file.settings ?? {};
      upsert['settings'] = Object.fromEntries(
        [...this.touchedSettings].map((field) => [field, settings[field]]),
      );
    }
    const changeSet: ChangeSetFile = {};
    if (Object.keys(upsert).length > 0) changeSet.upsert = upsert;
    if (Object.keys(deletions).length > 0) changeSet.delete = deletions;
    return changeSet;
  }
}

function deletionKey(collection: Collection, key: string): unknown {
  if (collection === 'techniques') {
    const at = key.lastIndexOf('@');
    return { id: key.slice(0, at), version: key.slice(at + 1) };
  }
  if (collection === 'relationships') {
    const [from, kind, to] = key.split(' ');
    return { from, to, kind };
  }
  return key;
}

/**
 * Applies the descriptions to a copy of the configuration and says which change set does the same:
 * the one to hand to `GenerationEngine.apply`, the configuration it should give, and whether it is
 * well-formed in itself.
 */
export function interpretChangeSet(fleet: Fleet, mutations: readonly Mutation[]): InterpretedChangeSet {
  const working = new Working(fleet);
  const effective: MutationKind[] = [];
  const broken: MalformedVariant[] = [];
  for (const mutation of mutations) {
    if (mutation.kind === 'malformed') {
      broken.push(mutation.variant);
      continue;
    }
    if (applyMutation(working, mutation)) effective.push(mutation.kind);
  }
  let changeSet = working.changeSet();
  let wellFormed = true;
  for (const variant of broken) {
    const result = breakChangeSet(changeSet, variant, working.file);
    changeSet = result.changeSet;
    wellFormed &&= !result.broken;
    if (result.broken) effective.push('malformed');
  }
  return { changeSet, resulting: working.file, wellFormed, effective };
}

function breakChangeSet(
  changeSet: ChangeSetFile,
  variant: MalformedVariant,
  file: ArbitraryFleetFile,
): { changeSet: ChangeSetFile; broken: boolean } {
  const result = clone(changeSet);
  const upsert = (result.upsert ??= {});
  const deletions = (result.delete ??= {});
  switch (variant) {
    case 'deleteUnknown':
      deletions['nodes'] = [...((deletions['nodes'] as string[] | undefined) ?? []), 'no-such-node'];
      return { changeSet: result, broken: true };
    case 'unknownSection':
      result['replace'] = {};
      return { changeSet: result, broken: true };
    case 'notAnArray':
      deletions['rules'] = 'r0';
      return { changeSet: result, broken: true };
    case 'upsertAndDelete': {
      const rule = file.rules[0];
      if (!rule) return { changeSet, broken: false };
      upsert['rules'] = [...((upsert['rules'] as unknown[] | undefined) ?? []), clone(rule)];
      deletions['rules'] = [...((deletions['rules'] as unknown[] | undefined) ?? []), rule.id];
      return { changeSet: result, broken: true };
    }
    case 'duplicateUpsert': {
      const node = file.nodes[0];
      if (!node) return { changeSet, broken: false };
      const nodes = (upsert['nodes'] as unknown[] | undefined) ?? [];
      upsert['nodes'] = [...nodes, clone(node), clone(node)];
      return { changeSet: result, broken: true };
    }
  }
}

/** The technique a directive uses, as generation resolves it (undefined when ambiguous). */
function techniqueOf(working: Working, directive: DirectiveInput): TechniqueInput | undefined {
  const versions = working.list('techniques').filter((technique) => technique.id === directive.technique);
  if (directive.techniqueVersion !== undefined)
    return versions.find((technique) => technique.version === directive.techniqueVersion);
  return versions.length === 1 ? versions[0] : undefined;
}

function parameterNames(technique: TechniqueInput | undefined): string[] {
  return (technique?.parameters ?? []).map((parameter) => parameter.name);
}

function promisesOf(blueprint: PromisesBlueprint, names: readonly string[], offset: number): PromiseInput[] {
  return blueprint.map(({ kind, parameter }, index): PromiseInput => {
    const name = at(names, parameter);
    const value = name === undefined ? 'fixed' : `{{${name}}}`;
    const promiser = `p${offset + index}`;
    switch (kind) {
      case 'vars':
        return { type: 'vars', promiser, attributes: { string: value } };
      case 'slist':
        return { type: 'vars', promiser, attributes: { slist: [value, 'z'] } };
      case 'reports':
        return { type: 'reports', promiser: `report ${value}` };
      case 'files':
        return { type: 'files', promiser: `/tmp/policygen/${value}`, attributes: { create: 'true' } };
      case 'commands':
        return { type: 'commands', promiser: '/bin/echo', attributes: { args: value } };
      case 'classes':
        return { type: 'classes', promiser: `policygen_${promiser}`, attributes: { expression: 'any' } };
    }
  });
}

type SettingField =
  'ordering' | 'orderingSeed' | 'policyMode' | 'policyModeOverridable' | 'parameterInheritModes';

/** Drops the inheritance modes of properties the level no longer sets (validation refuses them). */
function withoutDanglingModes(entity: {
  properties?: Record<string, unknown> | undefined;
  inheritModes?: Record<string, string> | undefined;
}): void {
  if (!entity.inheritModes) return;
  const properties = entity.properties ?? {};
  entity.inheritModes = Object.fromEntries(
    Object.entries(entity.inheritModes).filter(([name]) => Object.hasOwn(properties, name)),
  );
}

function setProperty(properties: Record<string, unknown>, change: PropertyChange): void {
  if (change.value === undefined) delete properties[change.key];
  else properties[change.key] = change.key === 'policygen_ordering' ? change.ordering : clone(change.value);
}

function factsOf(blueprint: FactsBlueprint): Record<string, Json> {
  const os = OPERATING_SYSTEMS[blueprint.os] ?? OPERATING_SYSTEMS[0];
  const facts: Record<string, Json> = { os: { name: os.name, version: os.version } };
  if (blueprint.arch !== undefined) facts['arch'] = blueprint.arch;
  if (blueprint.ram !== undefined) facts['ram'] = blueprint.ram;
  if (blueprint.role !== undefined) facts['role'] = blueprint.role;
  return facts;
}

/**
 * Directives some enabled rule carries (or every directive when none is): relationships between
 * them are the ones that can order or refresh policies on a node.
 */
function appliedDirectives(working: Working): DirectiveInput[] {
  const carried = new Set(
    working
      .list('rules')
      .filter((rule) => rule.enabled !== false)
      .flatMap((rule) => rule.directives ?? []),
  );
  const directives = working.list('directives');
  const applied = directives.filter((directive) => directive.enabled !== false && carried.has(directive.id));
  return applied.length > 0 ? applied : directives;
}

/**
 * An entity by position, twice as likely one of the preferred ones: most changes of an entity no
 * node uses show nowhere, and a property that nothing can break proves little.
 */
function preferring<T>(all: readonly T[], preferred: readonly T[], draw: number): T | undefined {
  return at(
    preferred.length > 0 && preferred.length < all.length ? [...preferred, ...preferred, ...all] : all,
    draw,
  );
}

function pickDirective(working: Working, draw: number): DirectiveInput | undefined {
  return preferring(working.list('directives'), appliedDirectives(working), draw);
}

/** Preferred: the versions applied directives use. */
function pickTechnique(working: Working, draw: number): TechniqueInput | undefined {
  const used = new Set(appliedDirectives(working).map((directive) => techniqueOf(working, directive)));
  const techniques = working.list('techniques');
  return preferring(
    techniques,
    techniques.filter((technique) => used.has(technique)),
    draw,
  );
}

/** Preferred: enabled rules carrying some directive. */
function pickRule(working: Working, draw: number): RuleInput | undefined {
  const rules = working.list('rules');
  return preferring(
    rules,
    rules.filter((rule) => rule.enabled !== false && (rule.directives ?? []).length > 0),
    draw,
  );
}

/** A technique's parameter names, twice as likely one its promises use. */
function preferUsed(technique: TechniqueInput | undefined): string[] {
  const names = parameterNames(technique);
  const text = JSON.stringify([technique?.promises ?? [], technique?.refresh ?? []]);
  const used = names.filter((name) => new RegExp(`\\{\\{\\s*${name}\\s*\\}\\}`).test(text));
  return used.length > 0 && used.length < names.length ? [...used, ...used, ...names] : names;
}

function policyServers(working: Working): string[] {
  return ['root', ...working.list('relays').map((relay) => relay.id)];
}

function resolveTarget(working: Working, target: TargetBlueprint): Target {
  if ('leaf' in target) {
    switch (target.leaf) {
      case 'all':
        return 'special:all';
      case 'allButServers':
        return 'special:all_exceptPolicyServers';
      case 'server':
        return `policyServer:${at(policyServers(working), target.server) ?? 'root'}`;
      case 'group': {
        const group = at(working.list('groups'), target.group);
        return group ? `group:${group.id}` : 'special:all';
      }
      case 'unknownGroup':
        return 'group:no-such-group';
    }
  }
  if ('list' in target) return target.list.map((inner) => resolveTarget(working, inner));
  if ('or' in target) return { or: target.or.map((inner) => resolveTarget(working, inner)) };
  if ('and' in target) return { and: target.and.map((inner) => resolveTarget(working, inner)) };
  return {
    include: resolveTarget(working, target.include),
    ...(target.exclude === undefined ? {} : { exclude: resolveTarget(working, target.exclude) }),
  };
}

/** The target with every leaf mapped; `undefined` from the mapper keeps the leaf. */
function mapTarget(target: Target, leaf: (value: string) => string | undefined): Target {
  if (typeof target === 'string') return leaf(target) ?? target;
  if (Array.isArray(target)) return target.map((inner: Target) => mapTarget(inner, leaf));
  const composite = target as Exclude<Target, string | readonly Target[]>;
  if ('or' in composite) return { or: composite.or.map((inner) => mapTarget(inner, leaf)) };
  if ('and' in composite) return { and: composite.and.map((inner) => mapTarget(inner, leaf)) };
  return {
    include: mapTarget(composite.include, leaf),
    ...(composite.exclude === undefined ? {} : { exclude: mapTarget(composite.exclude, leaf) }),
  };
}

function criteriaList(group: GroupInput): CriterionInput[] {
  const criteria = group.criteria;
  if (!criteria) return [];
  return 'all' in criteria ? criteria.all : criteria.any;
}

function groupOf(working: Working, body: GroupBody, id: string): GroupInput {
  const others = working.list('groups').filter((group) => group.id !== id);
  const criteria: CriterionInput[] = clone(body.criteria);
  const parent = body.parent === undefined ? undefined : at(others, body.parent);
  if (parent) criteria.push({ group: parent.id });
  const properties: Record<string, Json> = {};
  for (const change of body.properties) setProperty(properties, change);
  const nodes = [...new Set(body.nodes.flatMap((draw) => at(working.list('nodes'), draw)?.id ?? []))];
  return {
    id,
    name: `Group ${id}`,
    enabled: body.enabled,
    nodes,
    ...(criteria.length > 0 || parent
      ? { criteria: body.mode === 'all' ? { all: criteria } : { any: criteria } }
      : {}),
    properties,
  };
}

/** Applies one description; false when it had nothing to apply to. */
function applyMutation(working: Working, mutation: Exclude<Mutation, { kind: 'malformed' }>): boolean {
  const nodes = working.list('nodes');
  const directives = working.list('directives');
  const techniques = working.list('techniques');
  const rules = working.list('rules');
  const groups = working.list('groups');
  const relays = working.list('relays');

  switch (mutation.kind) {
    case 'nodeFacts': {
      const node = at(nodes, mutation.node);
      if (!node) return false;
      const facts = factsOf(mutation.facts);
      if (mutation.only === undefined) node.facts = facts;
      else {
        // One fact changed, the others kept: the value indexes see a value move, not a new node.
        node.facts = { ...node.facts };
        if (facts[mutation.only] === undefined) delete node.facts[mutation.only];
        else node.facts[mutation.only] = facts[mutation.only];
      }
      working.touch('nodes', node);
      return true;
    }
    case 'nodeProperty': {
      const node = at(nodes, mutation.node);
      if (!node) return false;
      node.properties = { ...node.properties };
      setProperty(node.properties, mutation.property);
      withoutDanglingModes(node);
      working.touch('nodes', node);
      return true;
    }
    case 'nodeState': {
      const node = at(nodes, mutation.node);
      if (!node) return false;
      node.state = mutation.state;
      working.touch('nodes', node);
      return true;
    }
    case 'nodePolicyServer': {
      const node = at(nodes, mutation.node);
      if (!node) return false;
      node.policyServer = mutation.unknown
        ? 'no-such-relay'
        : (at(policyServers(working), mutation.server) ?? 'root');
      working.touch('nodes', node);
      return true;
    }
    case 'nodeHostname': {
      const node = at(nodes, mutation.node);
      if (!node) return false;
      node.hostname = mutation.hostname;
      working.touch('nodes', node);
      return true;
    }
    case 'nodeAdd': {
      const properties: Record<string, Json> = {};
      for (const change of mutation.properties) setProperty(properties, change);
      const node: NodeInput = {
        id: `n${mutation.id}`,
        hostname: `n${mutation.id}.added.example.com`,
        policyServer: at(policyServers(working), mutation.server) ?? 'root',
        state: mutation.state,
        facts: factsOf(mutation.facts),
        properties,
      };
      working.upsert('nodes', node);
      const group = mutation.staticIn === undefined ? undefined : at(groups, mutation.staticIn);
      if (group && !(group.nodes ?? []).includes(node.id)) {
        group.nodes = [...(group.nodes ?? []), node.id];
        working.touch('groups', group);
      }
      return true;
    }
    case 'nodeDelete': {
      const node = at(nodes, mutation.node);
      if (!node) return false;
      working.remove('nodes', node);
      if (mutation.cascade) {
        for (const group of groups) {
          if (!(group.nodes ?? []).includes(node.id)) continue;
          group.nodes = (group.nodes ?? []).filter((id) => id !== node.id);
          working.touch('groups', group);
        }
      }
      return true;
    }
    case 'directiveParameter': {
      const directive = pickDirective(working, mutation.directive);
      if (!directive) return false;
      const name = mutation.undeclared
        ? 'undeclared'
        : at(preferUsed(techniqueOf(working, directive)), mutation.parameter);
      if (name === undefined) return false;
      const parameters = { ...directive.parameters };
      if (mutation.value === undefined) delete parameters[name];
      else parameters[name] = clone(mutation.value);
      directive.parameters = parameters;
      working.touch('directives', directive);
      return true;
    }
    case 'directivePriority': {
      const directive = pickDirective(working, mutation.directive);
      if (!directive) return false;
      directive.priority = mutation.priority;
      working.touch('directives', directive);
      return true;
    }
    case 'directiveEnabled': {
      const directive = pickDirective(working, mutation.directive);
      if (!directive) return false;
      directive.enabled = directive.enabled === false;
      working.touch('directives', directive);
      return true;
    }
    case 'directiveName': {
      const directive = pickDirective(working, mutation.directive);
      if (!directive) return false;
      directive.name = mutation.name;
      working.touch('directives', directive);
      return true;
    }
    case 'directiveVersion': {
      const directive = pickDirective(working, mutation.directive);
      if (!directive) return false;
      if (mutation.drop) delete directive.techniqueVersion;
      else {
        const versions = techniques.filter((technique) => technique.id === directive.technique);
        const technique = at(versions, mutation.version);
        if (!technique) return false;
        directive.techniqueVersion = technique.version;
        // Parameters the version does not declare would make the directive invalid.
        const names = new Set(parameterNames(technique));
        directive.parameters = Object.fromEntries(
          Object.entries(directive.parameters ?? {}).filter(([name]) => names.has(name)),
        );
      }
      working.touch('directives', directive);
      return true;
    }
    case 'directiveTechnique': {
      const directive = pickDirective(working, mutation.directive);
      const technique = at(techniques, mutation.technique);
      if (!directive || !technique) return false;
      directive.technique = technique.id;
      const versions = techniques.filter((candidate) => candidate.id === technique.id);
      if (versions.length > 1) directive.techniqueVersion = technique.version;
      else delete directive.techniqueVersion;
      const names = new Set(parameterNames(technique));
      directive.parameters = Object.fromEntries(
        Object.entries(directive.parameters ?? {}).filter(([name]) => names.has(name)),
      );
      working.touch('directives', directive);
      return true;
    }
    case 'directiveMeta': {
      const directive = pickDirective(working, mutation.directive);
      if (!directive) return false;
      if (mutation.remove) directive[mutation.relation] = [];
      else {
        const other = at(appliedDirectives(working), mutation.target);
        if (!other) return false;
        directive[mutation.relation] = [...(directive[mutation.relation] ?? []), other.id];
      }
      working.touch('directives', directive);
      return true;
    }
    case 'directiveAdd': {
      const technique = at(techniques, mutation.technique);
      if (!technique) return false;
      const versions = techniques.filter((candidate) => candidate.id === technique.id);
      const parameters: Record<string, Json> = {};
      parameterNames(technique).forEach((name, index) => {
        const value = mutation.values[index];
        if (value !== undefined) parameters[name] = clone(value);
      });
      const directive: DirectiveInput = {
        id: `dx${mutation.id}`,
        name: mutation.name,
        technique: technique.id,
        ...(versions.length > 1 ? { techniqueVersion: technique.version } : {}),
        ...(mutation.priority === undefined ? {} : { priority: mutation.priority }),
        parameters,
      };
      working.upsert('directives', directive);
      const rule = mutation.attachTo === undefined ? undefined : at(rules, mutation.attachTo);
      if (rule) {
        rule.directives = [...(rule.directives ?? []), directive.id];
        working.touch('rules', rule);
      }
      return true;
    }
    case 'directiveDelete': {
      const directive = pickDirective(working, mutation.directive);
      if (!directive) return false;
      working.remove('directives', directive);
      if (mutation.cascade & 1) {
        for (const rule of rules) {
          if (!(rule.directives ?? []).includes(directive.id)) continue;
          rule.directives = (rule.directives ?? []).filter((id) => id !== directive.id);
          working.touch('rules', rule);
        }
      }
      if (mutation.cascade & 2) {
        for (const relationship of [...working.list('relationships')])
          if (relationship.from === directive.id || relationship.to === directive.id)
            working.remove('relationships', relationship);
      }
      if (mutation.cascade & 4) {
        for (const other of directives) {
          let changed = false;
          for (const relation of RELATIONS) {
            const list = other[relation] ?? [];
            if (!list.includes(directive.id)) continue;
            other[relation] = list.filter((id) => id !== directive.id);
            changed = true;
          }
          if (changed) working.touch('directives', other);
        }
      }
      return true;
    }
    case 'techniqueEdit': {
      const technique = pickTechnique(working, mutation.technique);
      if (!technique) return false;
      let parameters: TechniqueParameterInput[] = clone(technique.parameters ?? []);
      if (mutation.addParameter) {
        const used = new Set(parameters.map((parameter) => parameter.name));
        let index = 0;
        while (used.has(`q${index}`)) index++;
        parameters.push({ name: `q${index}`, required: false });
      }
      if (mutation.dropParameter && parameters.length > 1) parameters = parameters.slice(0, -1);
      const target = at(parameters, mutation.defaultOf);
      if (target) {
        if (mutation.newDefault === undefined) delete target.default;
        else target.default = clone(mutation.newDefault);
        if (mutation.flipRequired) target.required = target.required !== true;
      }
      technique.parameters = parameters;
      const names = parameters.map((parameter) => parameter.name);
      if (mutation.badTemplate) names.push('not_a_parameter');
      if (mutation.promises) technique.promises = promisesOf(mutation.promises, names, 0);
      else if (mutation.dropParameter)
        technique.promises = promisesOf([{ kind: 'vars', parameter: 0 }], names, 0);
      if (mutation.refresh) technique.refresh = promisesOf(mutation.refresh, names, 100);
      else if (mutation.dropParameter) technique.refresh = [];
      if (mutation.flipMultiInstance) technique.multiInstance = technique.multiInstance !== true;
      if (mutation.generation !== undefined) technique.policyGeneration = mutation.generation;
      working.touch('techniques', technique);
      return true;
    }
    case 'techniqueNewVersion': {
      const base = pickTechnique(working, mutation.technique);
      if (!base) return false;
      const version = `${mutation.version}.0`;
      const sameId = techniques.filter((technique) => technique.id === base.id);
      if (mutation.pin && sameId.length === 1) {
        // Directives of a technique with several versions must name theirs.
        for (const directive of directives) {
          if (directive.technique !== base.id || directive.techniqueVersion !== undefined) continue;
          directive.techniqueVersion = base.version;
          working.touch('directives', directive);
        }
      }
      const parameters = clone(base.parameters ?? []);
      working.upsert('techniques', {
        id: base.id,
        version,
        name: `${base.name} v${version}`,
        multiInstance: mutation.multiInstance,
        policyGeneration: mutation.generation,
        parameters,
        promises: promisesOf(mutation.promises, parameterNames({ ...base, parameters }), 50),
      });
      return true;
    }
    case 'techniqueDeleteVersion': {
      const technique = pickTechnique(working, mutation.technique);
      if (!technique) return false;
      working.remove('techniques', technique);
      const remaining = techniques.filter((candidate) => candidate.id === technique.id);
      if (mutation.repoint) {
        const replacement = remaining[0];
        for (const directive of directives) {
          if (directive.technique !== technique.id) continue;
          if (directive.techniqueVersion !== undefined && directive.techniqueVersion !== technique.version) {
            if (remaining.length === 1) delete directive.techniqueVersion;
            else continue;
          } else if (replacement) {
            if (remaining.length === 1) delete directive.techniqueVersion;
            else directive.techniqueVersion = replacement.version;
            const names = new Set(parameterNames(replacement));
            directive.parameters = Object.fromEntries(
              Object.entries(directive.parameters ?? {}).filter(([name]) => names.has(name)),
            );
          }
          working.touch('directives', directive);
        }
      }
      return true;
    }
    case 'techniqueAdd': {
      const parameters = Array.from({ length: mutation.parameters }, (_, index) => ({
        name: `p${index}`,
        required: index === 0,
      }));
      const id = `tx${mutation.id}`;
      if (techniques.some((technique) => technique.id === id)) return false;
      working.upsert('techniques', {
        id,
        version: '1.0',
        name: `Added ${id}`,
        multiInstance: mutation.multiInstance,
        parameters,
        promises: promisesOf(
          mutation.promises,
          parameters.map((parameter) => parameter.name),
          0,
        ),
      });
      return true;
    }
    case 'ruleName': {
      const rule = pickRule(working, mutation.rule);
      if (!rule) return false;
      rule.name = mutation.name;
      working.touch('rules', rule);
      return true;
    }
    case 'ruleEnabled': {
      const rule = pickRule(working, mutation.rule);
      if (!rule) return false;
      rule.enabled = rule.enabled === false;
      working.touch('rules', rule);
      return true;
    }
    case 'ruleDirectives': {
      const rule = pickRule(working, mutation.rule);
      if (!rule) return false;
      rule.directives = mutation.directives.flatMap((draw) => at(directives, draw)?.id ?? []);
      if (mutation.unknown) rule.directives.push('no-such-directive');
      working.touch('rules', rule);
      return true;
    }
    case 'ruleTargets': {
      const rule = pickRule(working, mutation.rule);
      if (!rule) return false;
      rule.targets = resolveTarget(working, mutation.target);
      working.touch('rules', rule);
      return true;
    }
    case 'ruleAdd': {
      working.upsert('rules', {
        id: `rx${mutation.id}`,
        name: mutation.name,
        enabled: mutation.enabled,
        directives: mutation.directives.flatMap((draw) => at(directives, draw)?.id ?? []),
        targets: resolveTarget(working, mutation.target),
      });
      return true;
    }
    case 'ruleDelete': {
      const rule = pickRule(working, mutation.rule);
      if (!rule) return false;
      working.remove('rules', rule);
      return true;
    }
    case 'groupCriteria': {
      const group = at(groups, mutation.group);
      if (!group) return false;
      // Replaced whole, or edited by one criterion (the group is evaluated again on what it tested
      // before), or `rotate`: the same criteria in another order (or one twice), the same members.
      const current = criteriaList(group);
      let list: CriterionInput[];
      if (mutation.edit === 'append') list = [...current, ...clone(mutation.criteria.slice(0, 1))];
      else if (mutation.edit === 'rotate')
        list = current.length > 1 ? [...current.slice(1), ...current.slice(0, 1)] : [...current, ...current];
      else if (mutation.edit === 'drop') list = current.slice(1);
      else {
        list = clone(mutation.criteria);
        if (mutation.keepParents) list.push(...current.filter((criterion) => 'group' in criterion));
      }
      const mode =
        mutation.edit === 'replace'
          ? mutation.mode
          : group.criteria && 'any' in group.criteria
            ? 'any'
            : 'all';
      if (list.length === 0) delete group.criteria;
      else group.criteria = mode === 'all' ? { all: list } : { any: list };
      working.touch('groups', group);
      return true;
    }
    case 'groupNodes': {
      const group = at(groups, mutation.group);
      if (!group) return false;
      group.nodes = [...new Set(mutation.nodes.flatMap((draw) => at(nodes, draw)?.id ?? []))];
      working.touch('groups', group);
      return true;
    }
    case 'groupProperty': {
      const group = at(groups, mutation.group);
      if (!group) return false;
      group.properties = { ...group.properties };
      setProperty(group.properties, mutation.property);
      withoutDanglingModes(group);
      working.touch('groups', group);
      return true;
    }
    case 'groupEnabled': {
      const group = at(groups, mutation.group);
      if (!group) return false;
      group.enabled = group.enabled === false;
      working.touch('groups', group);
      return true;
    }
    case 'groupParent': {
      const group = at(groups, mutation.group);
      if (!group) return false;
      // A parent counts in an `all` only: the other criteria move into it.
      const list = criteriaList(group).filter((criterion) => !('group' in criterion));
      const parent = mutation.parent === undefined ? undefined : at(groups, mutation.parent);
      if (parent) list.push({ group: parent.id });
      if (list.length === 0) delete group.criteria;
      else group.criteria = { all: list };
      working.touch('groups', group);
      return true;
    }
    case 'groupAdd': {
      working.upsert('groups', groupOf(working, mutation.body, `gx${mutation.id}`));
      return true;
    }
    case 'groupDelete': {
      const group = at(groups, mutation.group);
      if (!group) return false;
      working.remove('groups', group);
      if (mutation.cascade & 1) {
        const reference = `group:${group.id}`;
        for (const rule of rules) {
          const targets = (rule.targets ?? []) as Target;
          if (!JSON.stringify(targets).includes(JSON.stringify(reference))) continue;
          rule.targets = mapTarget(targets, (leaf) => (leaf === reference ? 'special:all' : undefined));
          working.touch('rules', rule);
        }
      }
      if (mutation.cascade & 2) {
        for (const other of groups) {
          const list = criteriaList(other);
          if (!list.some((criterion) => 'group' in criterion && criterion.group === group.id)) continue;
          const kept = list.filter((criterion) => !('group' in criterion && criterion.group === group.id));
          if (kept.length === 0) delete other.criteria;
          else other.criteria = other.criteria && 'all' in other.criteria ? { all: kept } : { any: kept };
          working.touch('groups', other);
        }
      }
      return true;
    }
    case 'parameterSet': {
      working.setParameter(
        mutation.name,
        mutation.name === 'policygen_ordering' ? mutation.ordering : clone(mutation.value),
      );
      return true;
    }
    case 'parameterDelete': {
      const name = at(Object.keys(working.file.parameters).sort(), mutation.name);
      if (name === undefined) return false;
      working.setParameter(name, undefined);
      // Its inheritance mode goes with it, in the same change set.
      const modes = working.file.settings?.parameterInheritModes;
      if (modes && Object.hasOwn(modes, name)) {
        const { [name]: _dropped, ...kept } = modes;
        working.setSetting('parameterInheritModes', kept);
      }
      return true;
    }
    case 'settings': {
      const fields = (['ordering', 'orderingSeed', 'policyMode', 'policyModeOverridable'] as const).filter(
        (field) => mutation[field] !== undefined,
      );
      if (fields.length === 0) return false;
      for (const field of fields) working.setSetting(field, mutation[field] as string | number | boolean);
      return true;
    }
    case 'policyMode': {
      const entity =
        mutation.level === 'node' ? at(nodes, mutation.target) : pickDirective(working, mutation.target);
      if (!entity) return false;
      if (mutation.mode === undefined) delete entity.policyMode;
      else entity.policyMode = mutation.mode;
      working.touch(mutation.level === 'node' ? 'nodes' : 'directives', entity);
      return true;
    }
    case 'inheritMode': {
      if (mutation.level === 'parameter') {
        const name = at(Object.keys(working.file.parameters).sort(), mutation.target);
        if (name === undefined) return false;
        const { [name]: _previous, ...others } = working.file.settings?.parameterInheritModes ?? {};
        working.setSetting(
          'parameterInheritModes',
          mutation.mode === undefined ? others : { ...others, [name]: mutation.mode },
        );
        return true;
      }
      const entity = mutation.level === 'node' ? at(nodes, mutation.target) : at(groups, mutation.target);
      const name = entity ? Object.keys(entity.properties ?? {}).sort()[0] : undefined;
      if (!entity || name === undefined) return false;
      const { [name]: _previous, ...others } = entity.inheritModes ?? {};
      entity.inheritModes = mutation.mode === undefined ? others : { ...others, [name]: mutation.mode };
      working.touch(mutation.level === 'node' ? 'nodes' : 'groups', entity);
      return true;
    }
    case 'relationshipAdd': {
      const applied = appliedDirectives(working);
      const from = at(applied, mutation.from);
      const to = at(applied, mutation.to);
      if (!from || !to) return false;
      working.upsert('relationships', { from: from.id, to: to.id, kind: mutation.arrow });
      return true;
    }
    case 'relationshipDelete': {
      const relationship = at(working.list('relationships'), mutation.relationship);
      if (!relationship) return false;
      working.remove('relationships', relationship);
      return true;
    }
    case 'relayAdd': {
      // A relay may carry the id of a node: that node is then a policy server.
      const id = mutation.root
        ? 'root'
        : mutation.nodeId
          ? (at(nodes, mutation.id)?.id ?? `relay${mutation.id}`)
          : `relay${mutation.id}`;
      const parent = at(
        policyServers(working).filter((server) => server !== id),
        mutation.parent,
      );
      working.upsert('relays', { id, policyServer: parent ?? 'root' });
      return true;
    }
    case 'relayDelete': {
      const relay = at(relays, mutation.relay);
      if (!relay) return false;
      working.remove('relays', relay);
      const parent = relay.policyServer ?? 'root';
      if (mutation.cascade & 1) {
        for (const node of nodes) {
          if (node.policyServer !== relay.id) continue;
          node.policyServer = parent;
          working.touch('nodes', node);
        }
      }
      if (mutation.cascade & 2) {
        for (const other of relays) {
          if (other.policyServer !== relay.id) continue;
          other.policyServer = parent;
          working.touch('relays', other);
        }
      }
      if (mutation.cascade & 4) {
        const reference = `policyServer:${relay.id}`;
        for (const rule of rules) {
          const targets = (rule.targets ?? []) as Target;
          if (!JSON.stringify(targets).includes(JSON.stringify(reference))) continue;
          rule.targets = mapTarget(targets, (leaf) =>
            leaf === reference ? `policyServer:${parent}` : undefined,
          );
          working.touch('rules', rule);
        }
      }
      return true;
    }
    case 'relayReparent': {
      const relay = at(relays, mutation.relay);
      if (!relay) return false;
      // Under itself is a cycle too plain to be worth drawing; cycles through others are kept.
      const servers = policyServers(working).filter((server) => server !== relay.id);
      relay.policyServer = at(servers, mutation.parent) ?? 'root';
      working.touch('relays', relay);
      return true;
    }
  }
}
