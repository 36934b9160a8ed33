import fc from 'fast-check';
import type { Target } from '../lib/model/fleet';
import type {
  DirectiveInput,
  FleetFile,
  GroupInput,
  NodeInput,
  RelationshipInput,
  RuleInput,
  TechniqueInput,
} from '../lib/model/fleet-input';
import type { Json } from '../lib/model/json';

/**
 * Random, VALID fleet files for property-based tests (fleet-format.md): small fleets (1–4
 * techniques, up to 12 directives, 6 rules, 4 groups, 6 nodes) built to hit the corners of the
 * semantics — case variants and digit strings among names, all merge modes, mixed technique
 * versions, tricky parameter values, nested targets, subgroups, relays, relationships.
 */

export type {
  DirectiveInput,
  GroupInput,
  NodeInput,
  RelationshipInput,
  RelayInput,
  RuleInput,
  TechniqueInput,
} from '../lib/model/fleet-input';

/** A fleet file as written (plain JSON), every collection present, settings optional. */
export type ArbitraryFleetFile = Omit<FleetFile, 'settings'> & Partial<Pick<FleetFile, 'settings'>>;

/**
 * - `none`: no relationship at all.
 * - `acyclic`: declared edges agree with one total order of the policies, so no node can have a
 *   dependency cycle: directives are numbered by technique and version first (a merged policy
 *   holds every directive of its technique's merged versions, so the edges of its directives must
 *   not point both ways), and
 *   `before`/`notify`/`->`/`~>` only go from a lower to a higher index, `require`/`subscribe` only
 *   from a higher to a lower one.
 * - `any`: arbitrary edges, cycles included.
 *
 * Metaparameters are strict: a directive naming one that is not applied on a node fails that node
 * with MISSING_DEPENDENCY, whatever the mode.
 */
export type RelationshipMode = 'none' | 'acyclic' | 'any';

export interface FleetArbitraryOptions {
  readonly relationships?: RelationshipMode;
}

export const DIRECTIVE_NAMES = [
  'a',
  'A',
  'b',
  'B',
  'Ab',
  'aB',
  '50',
  '100',
  '10',
  '9',
  'Z',
  'dns',
  'DNS',
  'é',
  'É',
  '',
] as const;
export const RULE_NAMES = ['R', 'r', '50', '100', 'a', 'B', '05. Base', '05. base', 'é', 'Z'] as const;

/** Parameter values that have broken generators before: quoting, references, unicode. */
export const TRICKY_VALUES = [
  'plain',
  '',
  'with "quotes"',
  'back\\slash',
  'trailing\\',
  '\\"',
  '"',
  "it's",
  '$(sys.host)',
  '/etc/$(sys.fqhost).conf',
  '${sys.fqhost}',
  '${rudder.node.id}',
  '${rudder.node.hostname}',
  '${rudder.node.policyserver.id}',
  '${node.properties[dc][dns] | default = "x"}',
  '${node.properties[dc] | default = "none"}',
  '${ node.properties[role] | default = "no \\"role\\"" }',
  '${rudder.param.dns | default = "8.8.8.8"}',
  'unicode é 日本 ✓ 🙂',
  'multi\nline',
  'tab\there',
  '{{p1}}',
  'a;b,c',
  '# not a comment',
  '100',
  '50',
  'B',
] as const;

/** Values that fail a node when its properties or parameters lack them: rare on purpose. */
const FAILING_VALUES = ['${node.properties[dc][dns]}', '${rudder.param.dns}'] as const;

const SAFE_CHARACTERS = [
  'a',
  'b',
  'Z',
  '0',
  '9',
  ' ',
  '"',
  '\\',
  "'",
  'é',
  '日',
  '\n',
  '{',
  '}',
  '[',
  ']',
  ';',
  ',',
  '#',
  '%',
  '.',
  '/',
] as const;

const stringValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...TRICKY_VALUES) },
  { weight: 4, arbitrary: fc.string({ unit: fc.constantFrom(...SAFE_CHARACTERS), maxLength: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom(...FAILING_VALUES) },
);

/** A directive parameter value: mostly strings, sometimes other JSON (rendered as compact JSON). */
const parameterValue: fc.Arbitrary<Json> = fc.oneof(
  { weight: 10, arbitrary: stringValue },
  {
    weight: 1,
    arbitrary: fc.oneof(
      fc.integer({ min: -5, max: 100 }),
      fc.boolean(),
      fc.constant<Json>(['x', 'y "z"']),
      fc.constant<Json>({ k: 'v', n: 1, nested: { q: '"' } }),
    ),
  },
);

/** Small JSON values for properties and global parameters. */
const propertyValue: fc.Arbitrary<Json> = fc.constantFrom<Json>(
  'a',
  'b',
  1,
  true,
  ['x', 'y'],
  { dns: '10.0.0.2' },
  { dns: '10.0.0.3', extra: true },
  { nested: { k: 'v' } },
  'with "quotes" and \\',
);

const PROMISE_KINDS = [
  'vars-string',
  'vars-slist',
  'vars-int',
  'classes',
  'files',
  'commands',
  'commands-args',
  'reports',
] as const;
type PromiseKind = (typeof PROMISE_KINDS)[number];

const promiseBlueprint = fc.record({
  kind: fc.constantFrom(...PROMISE_KINDS),
  parameter: fc.nat({ max: 2 }),
  other: fc.nat({ max: 2 }),
  spaced: fc.boolean(),
});
type PromiseBlueprint = typeof promiseBlueprint extends fc.Arbitrary<infer T> ? T : never;

const GENERATIONS = [
  undefined,
  'merged',
  'separated',
  'separated-with-parameters',
  'separated-with-param',
] as const;

const techniqueBlueprint = fc.record({
  suffix: fc.constantFrom('', '', '', '-x', '.y', '_z'),
  multiInstance: fc.boolean(),
  generation: fc.constantFrom(...GENERATIONS),
  parameters: fc.array(
    fc.record({
      required: fc.boolean(),
      default: fc.option(stringValue, { nil: undefined, freq: 2 }),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  promises: fc.array(promiseBlueprint, { minLength: 1, maxLength: 4 }),
  refresh: fc.option(fc.array(promiseBlueprint, { minLength: 1, maxLength: 2 }), { nil: undefined, freq: 2 }),
});

const secondVersionBlueprint = fc.record({
  technique: fc.nat(),
  multiInstance: fc.boolean(),
  generation: fc.constantFrom(...GENERATIONS),
  dropLastParameter: fc.boolean(),
  promises: fc.array(promiseBlueprint, { minLength: 1, maxLength: 3 }),
});

const policyMode = fc.option(fc.constantFrom('audit' as const, 'enforce' as const), {
  nil: undefined,
  freq: 4,
});
/** Rudder's inheritance modes, the default among them. */
const inheritMode = fc.option(fc.constantFrom('moo', 'mao', 'mpo', 'ooo', 'moa', 'mop', 'oaa'), {
  nil: undefined,
  freq: 3,
});

/** A mode for the first property a level sets, if it draws one. */
function inheritModesOf(
  properties: Readonly<Record<string, Json>>,
  mode: string | undefined,
): Record<string, string> | undefined {
  const first = Object.keys(properties)[0];
  return first === undefined || mode === undefined ? undefined : { [first]: mode };
}

const mostly = (probability: number): fc.Arbitrary<boolean> =>
  fc.integer({ min: 0, max: 99 }).map((draw) => draw < probability * 100);

const directiveBlueprint = fc.record({
  technique: fc.nat(),
  secondVersion: fc.boolean(),
  statesVersion: fc.boolean(),
  name: fc.constantFrom(...DIRECTIVE_NAMES),
  priority: fc.option(fc.integer({ min: 0, max: 10 }), { nil: undefined, freq: 4 }),
  policyMode,
  enabled: mostly(0.9),
  values: fc.array(fc.option(parameterValue, { nil: undefined, freq: 8 }), { minLength: 3, maxLength: 3 }),
  meta: fc.option(
    fc.record({
      before: fc.array(fc.nat(), { maxLength: 2 }),
      require: fc.array(fc.nat(), { maxLength: 2 }),
      notify: fc.array(fc.nat(), { maxLength: 1 }),
      subscribe: fc.array(fc.nat(), { maxLength: 1 }),
    }),
    { nil: undefined, freq: 2 },
  ),
});
type DirectiveBlueprint = typeof directiveBlueprint extends fc.Arbitrary<infer T> ? T : never;

/** Leaves are resolved once the fleet's groups and relays are known. */
type TargetLeaf = 'special:all' | 'special:all_exceptPolicyServers' | 'policyServer' | { group: number };
type TargetBlueprint =
  | TargetLeaf
  | TargetBlueprint[]
  | { or: TargetBlueprint[] }
  | { and: TargetBlueprint[] }
  | { include: TargetBlueprint; exclude?: TargetBlueprint };

const targetLeaf: fc.Arbitrary<TargetLeaf> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<TargetLeaf>('special:all') },
  { weight: 1, arbitrary: fc.constant<TargetLeaf>('special:all_exceptPolicyServers') },
  { weight: 1, arbitrary: fc.constant<TargetLeaf>('policyServer') },
  { weight: 5, arbitrary: fc.nat().map((group): TargetLeaf => ({ group })) },
);

const nestedTarget: fc.Arbitrary<TargetBlueprint> = fc.letrec<{ target: TargetBlueprint }>((tie) => ({
  target: fc.oneof(
    { maxDepth: 3, depthSize: 'small' },
    targetLeaf,
    fc.array(tie('target'), { maxLength: 3 }),
    fc.record({ or: fc.array(tie('target'), { maxLength: 3 }) }),
    fc.record({ and: fc.array(tie('target'), { maxLength: 3 }) }),
    fc.record({ include: tie('target'), exclude: tie('target') }, { requiredKeys: ['include'] }),
  ),
})).target;

const targetBlueprint: fc.Arbitrary<TargetBlueprint | undefined> = fc.oneof(
  { weight: 3, arbitrary: targetLeaf },
  { weight: 2, arbitrary: fc.array(targetLeaf, { minLength: 1, maxLength: 2 }) },
  {
    weight: 3,
    arbitrary: fc.record(
      {
        include: fc.array(targetLeaf, { minLength: 1, maxLength: 2 }),
        exclude: fc.array(targetLeaf, { maxLength: 2 }),
      },
      { requiredKeys: ['include'] },
    ),
  },
  { weight: 3, arbitrary: nestedTarget },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

const ruleBlueprint = fc.record({
  name: fc.constantFrom(...RULE_NAMES),
  enabled: mostly(0.9),
  directives: fc.array(fc.nat(), { maxLength: 5 }),
  target: targetBlueprint,
});

type CriterionInput =
  NonNullable<GroupInput['criteria']> extends infer C ? (C extends { all: (infer I)[] } ? I : never) : never;

const FACT_CRITERIA: readonly CriterionInput[] = [
  { fact: 'os.name', op: 'eq', value: 'Debian' },
  { fact: 'os.name', op: 'neq', value: 'Debian' },
  { fact: 'os.name', op: 'regex', value: '^(Debian|Ubuntu)$' },
  { fact: 'os.name', op: 'regex', value: 'u' },
  { fact: 'os.name', op: 'in', value: ['RHEL', 'Ubuntu', 'debian', 'Debian'] },
  { fact: 'arch', op: 'exists' },
  { fact: 'missing.fact', op: 'notExists' },
  { fact: 'os.version', op: 'ge', value: '12' },
  { fact: 'os.version', op: 'lt', value: '22.04' },
  { fact: 'ram', op: 'gt', value: 4 },
  { fact: 'ram', op: 'le', value: 8 },
  { fact: 'ram', op: 'in', value: [1, 2, 4, 8, 16] },
  { property: 'dc', op: 'exists' },
  { property: 'dc.dns', op: 'eq', value: '10.0.0.1' },
];

const groupBlueprint = fc.record({
  enabled: mostly(0.9),
  nodes: fc.array(fc.nat(), { maxLength: 3 }),
  criteria: fc.option(
    fc.record({
      mode: fc.constantFrom('all', 'any'),
      list: fc.array(fc.constantFrom(...FACT_CRITERIA), { maxLength: 3 }),
      parent: fc.option(fc.nat(), { nil: undefined, freq: 2 }),
    }),
    { nil: undefined, freq: 3 },
  ),
  properties: fc.dictionary(fc.constantFrom('dc', 'role', 'team', 'shared'), propertyValue, { maxKeys: 2 }),
  inheritMode,
});

const OPERATING_SYSTEMS = [
  { name: 'Debian', version: '12' },
  { name: 'Debian', version: '11' },
  { name: 'Ubuntu', version: '22.04' },
  { name: 'RHEL', version: '9.4' },
  { name: 'debian', version: '12.10' },
] as const;

const ORDERING_MODES = ['alphanumeric', 'title-hash', 'random'] as const;

const nodeBlueprint = fc.record({
  os: fc.nat({ max: OPERATING_SYSTEMS.length - 1 }),
  arch: fc.constantFrom('x86_64', 'aarch64', undefined),
  ram: fc.option(fc.constantFrom(1, 2, 4, 8, 16), { nil: undefined }),
  state: fc.constantFrom(
    'enabled',
    'enabled',
    'enabled',
    'enabled',
    'enabled',
    'enabled',
    'enabled',
    'ignored',
    'empty-policies',
  ),
  underRelay: fc.boolean(),
  properties: fc.dictionary(fc.constantFrom('dc', 'role', 'shared'), propertyValue, { maxKeys: 2 }),
  inheritMode,
  policyMode,
  ordering: fc.option(fc.constantFrom(...ORDERING_MODES), { nil: undefined, freq: 6 }),
});

const fleetBlueprint = fc.record({
  settings: fc.option(
    fc.record(
      {
        ordering: fc.constantFrom('alphanumeric', 'alphanumeric', 'title-hash', 'random'),
        orderingSeed: fc.integer({ min: 0, max: 1000 }),
        policyMode: fc.constantFrom('audit' as const, 'enforce' as const),
        policyModeOverridable: fc.boolean(),
      },
      { requiredKeys: [] },
    ),
    { nil: undefined },
  ),
  parameters: fc.dictionary(fc.constantFrom('dns', 'dc', 'shared'), propertyValue, { maxKeys: 2 }),
  parameterInheritMode: inheritMode,
  techniques: fc.array(techniqueBlueprint, { minLength: 1, maxLength: 4 }),
  secondVersion: fc.option(secondVersionBlueprint, { nil: undefined, freq: 3 }),
  directives: fc.array(directiveBlueprint, { maxLength: 12 }),
  relationships: fc.array(
    fc.record({
      from: fc.nat(),
      to: fc.nat(),
      kind: fc.constantFrom('->', '~>', undefined),
    }),
    { maxLength: 6 },
  ),
  rules: fc.array(ruleBlueprint, { maxLength: 6 }),
  groups: fc.array(groupBlueprint, { maxLength: 4 }),
  nodes: fc.array(nodeBlueprint, { minLength: 1, maxLength: 6 }),
  relay: fc.boolean(),
});
type FleetBlueprint = typeof fleetBlueprint extends fc.Arbitrary<infer T> ? T : never;

/** A fast-check arbitrary of valid fleet files (`validateFleet(...).ok === true`). */
export function arbitraryFleet(options: FleetArbitraryOptions = {}): fc.Arbitrary<ArbitraryFleetFile> {
  const mode = options.relationships ?? 'none';
  return fleetBlueprint.map((blueprint) => buildFleet(blueprint, mode));
}

function promiseOf(
  blueprint: PromiseBlueprint,
  index: number,
  parameterNames: readonly string[],
): TechniqueInput['promises'] extends (infer P)[] | undefined ? P : never {
  const name = (which: number): string => {
    const parameter = parameterNames[which % parameterNames.length] as string;
    return blueprint.spaced ? `{{ ${parameter} }}` : `{{${parameter}}}`;
  };
  const p = name(blueprint.parameter);
  const o = name(blueprint.other);
  const kind: PromiseKind = blueprint.kind;
  switch (kind) {
    case 'vars-string':
      return { type: 'vars', promiser: `v${index}`, attributes: { string: `value ${p}` } };
    case 'vars-slist':
      return { type: 'vars', promiser: `l${index}`, attributes: { slist: [p, 'x', o] } };
    case 'vars-int':
      return { type: 'vars', promiser: `i${index}`, attributes: { int: index } };
    case 'classes':
      return {
        type: 'classes',
        promiser: `policygen_c${index}`,
        attributes: { expression: 'any', meta: [p] },
      };
    case 'files':
      return { type: 'files', promiser: `/tmp/policygen-test/${p}`, attributes: { create: 'true' } };
    case 'commands':
      return { type: 'commands', promiser: '/bin/true' };
    case 'commands-args':
      return { type: 'commands', promiser: '/bin/true', attributes: { args: `${p} ${o}` } };
    case 'reports':
      return { type: 'reports', promiser: `${p} and ${o}` };
  }
}

function buildFleet(blueprint: FleetBlueprint, mode: RelationshipMode): ArbitraryFleetFile {
  const techniques: TechniqueInput[] = blueprint.techniques.map((technique, index) => {
    const parameterNames = technique.parameters.map((_, i) => `p${i}`);
    return {
      id: `t${index}${technique.suffix}`,
      version: '1.0',
      name: `Technique ${index}`,
      multiInstance: technique.multiInstance,
      ...(technique.generation === undefined ? {} : { policyGeneration: technique.generation }),
      parameters: technique.parameters.map((parameter, i) => ({
        name: `p${i}`,
        required: parameter.required,
        ...(parameter.default === undefined ? {} : { default: parameter.default }),
      })),
      promises: technique.promises.map((promise, i) => promiseOf(promise, i, parameterNames)),
      ...(technique.refresh === undefined
        ? {}
        : { refresh: technique.refresh.map((promise, i) => promiseOf(promise, 100 + i, parameterNames)) }),
    };
  });

  // Parameter names per technique index and version.
  const parametersOf = new Map<string, string[]>();
  techniques.forEach((technique, index) =>
    parametersOf.set(
      `${index}@1.0`,
      (technique.parameters ?? []).map((parameter) => parameter.name),
    ),
  );
  const second = blueprint.secondVersion;
  const twoVersions = second === undefined ? undefined : second.technique % techniques.length;
  if (second !== undefined && twoVersions !== undefined) {
    const first = techniques[twoVersions] as TechniqueInput;
    const parameters = [...(first.parameters ?? [])];
    if (second.dropLastParameter && parameters.length > 1) parameters.pop();
    const names = parameters.map((parameter) => parameter.name);
    parametersOf.set(`${twoVersions}@2.0`, names);
    techniques.push({
      id: first.id,
      version: '2.0',
      name: `${first.name} v2`,
      multiInstance: second.multiInstance,
      ...(second.generation === undefined ? {} : { policyGeneration: second.generation }),
      parameters,
      promises: second.promises.map((promise, i) => promiseOf(promise, 50 + i, names)),
    });
  }

  const techniqueCount = blueprint.techniques.length;
  let directiveBlueprints: DirectiveBlueprint[] = blueprint.directives;
  if (mode === 'acyclic') {
    // Number the directives by technique, then version (each version merges as it says), so that
    // index order is one order of the policies.
    const versionOf = (directive: DirectiveBlueprint): number =>
      twoVersions === directive.technique % techniqueCount && directive.secondVersion ? 1 : 0;
    directiveBlueprints = directiveBlueprints
      .map((directive, index) => ({ directive, index }))
      .sort(
        (a, b) =>
          (a.directive.technique % techniqueCount) - (b.directive.technique % techniqueCount) ||
          versionOf(a.directive) - versionOf(b.directive) ||
          a.index - b.index,
      )
      .map(({ directive }) => directive);
  }
  const count = directiveBlueprints.length;
  const directiveId = (index: number): string => `d${index}`;
  const lower = (index: number, draw: number): string[] => (index > 0 ? [directiveId(draw % index)] : []);
  const higher = (index: number, draw: number): string[] =>
    index < count - 1 ? [directiveId(index + 1 + (draw % (count - index - 1)))] : [];
  const anyOf = (draw: number): string[] => (count > 0 ? [directiveId(draw % count)] : []);

  const directives: DirectiveInput[] = directiveBlueprints.map((directive, index) => {
    const techniqueIndex = directive.technique % techniqueCount;
    const technique = techniques[techniqueIndex] as TechniqueInput;
    const useSecond = twoVersions === techniqueIndex && directive.secondVersion;
    const version = useSecond ? '2.0' : '1.0';
    const names = parametersOf.get(`${techniqueIndex}@${version}`) ?? [];
    const parameters: Record<string, Json> = {};
    names.forEach((name, i) => {
      const value = directive.values[i];
      if (value !== undefined) parameters[name] = value;
    });
    const relations: Partial<Record<'before' | 'require' | 'notify' | 'subscribe', string[]>> = {};
    if (directive.meta !== undefined && mode !== 'none') {
      for (const kind of ['before', 'require', 'notify', 'subscribe'] as const) {
        const forward = kind === 'before' || kind === 'notify';
        const targets = directive.meta[kind].flatMap((draw) =>
          mode === 'any' ? anyOf(draw) : forward ? higher(index, draw) : lower(index, draw),
        );
        if (targets.length > 0) relations[kind] = targets;
      }
    }
    return {
      id: directiveId(index),
      name: directive.name,
      technique: technique.id,
      ...(twoVersions === techniqueIndex || directive.statesVersion ? { techniqueVersion: version } : {}),
      ...(directive.priority === undefined ? {} : { priority: directive.priority }),
      ...(directive.policyMode === undefined ? {} : { policyMode: directive.policyMode }),
      ...(directive.enabled ? {} : { enabled: false }),
      parameters,
      ...relations,
    };
  });

  const relationships: RelationshipInput[] = [];
  if (mode !== 'none' && count > 0) {
    for (const relationship of blueprint.relationships) {
      let from = relationship.from % count;
      let to = relationship.to % count;
      if (mode === 'acyclic') {
        if (from === to) continue;
        [from, to] = [Math.min(from, to), Math.max(from, to)];
      }
      relationships.push({
        from: directiveId(from),
        to: directiveId(to),
        ...(relationship.kind === undefined ? {} : { kind: relationship.kind }),
      });
    }
  }

  const nodeCount = blueprint.nodes.length;
  const relayId = blueprint.relay && nodeCount > 1 ? 'n0' : undefined;
  const groupCount = blueprint.groups.length;
  const resolveTarget = (target: TargetBlueprint): Target => {
    if (target === 'special:all' || target === 'special:all_exceptPolicyServers') return target;
    if (target === 'policyServer') return `policyServer:${relayId ?? 'root'}`;
    if (Array.isArray(target)) return target.map(resolveTarget);
    if ('group' in target) return groupCount > 0 ? `group:g${target.group % groupCount}` : 'special:all';
    if ('or' in target) return { or: target.or.map(resolveTarget) };
    if ('and' in target) return { and: target.and.map(resolveTarget) };
    return {
      include: resolveTarget(target.include),
      ...(target.exclude === undefined ? {} : { exclude: resolveTarget(target.exclude) }),
    };
  };

  const rules: RuleInput[] = blueprint.rules.map((rule, index) => ({
    id: `r${index}`,
    name: rule.name,
    ...(rule.enabled ? {} : { enabled: false }),
    directives: count > 0 ? rule.directives.map((draw) => directiveId(draw % count)) : [],
    ...(rule.target === undefined ? {} : { targets: resolveTarget(rule.target) }),
  }));

  const groups: GroupInput[] = blueprint.groups.map((group, index) => {
    let criteria: GroupInput['criteria'];
    if (group.criteria !== undefined) {
      const list: CriterionInput[] = group.criteria.list.map((criterion) => structuredClone(criterion));
      // Subgroups only of lower-indexed groups: membership is never cyclic.
      if (group.criteria.parent !== undefined && index > 0)
        list.push({ group: `g${group.criteria.parent % index}` });
      criteria = group.criteria.mode === 'all' ? { all: list } : { any: list };
    }
    return {
      id: `g${index}`,
      name: `Group ${index}`,
      ...(group.enabled ? {} : { enabled: false }),
      nodes: [...new Set(group.nodes.map((draw) => `n${draw % nodeCount}`))],
      ...(criteria === undefined ? {} : { criteria }),
      properties: structuredClone(group.properties),
      ...optional('inheritModes', inheritModesOf(group.properties, group.inheritMode)),
    };
  });

  const nodes: NodeInput[] = blueprint.nodes.map((node, index) => {
    const os = OPERATING_SYSTEMS[node.os] ?? OPERATING_SYSTEMS[0];
    const facts: Record<string, Json> = { os: { name: os.name, version: os.version } };
    if (node.arch !== undefined) facts['arch'] = node.arch;
    if (node.ram !== undefined) facts['ram'] = node.ram;
    const properties: Record<string, Json> = structuredClone(node.properties);
    if (node.ordering !== undefined) properties['policygen_ordering'] = node.ordering;
    return {
      id: `n${index}`,
      hostname: `n${index}.example.com`,
      policyServer: relayId !== undefined && index > 0 && node.underRelay ? relayId : 'root',
      state: node.state,
      facts,
      properties,
      ...optional('inheritModes', inheritModesOf(node.properties, node.inheritMode)),
      ...(node.policyMode === undefined ? {} : { policyMode: node.policyMode }),
    };
  });

  const parameterInheritModes = inheritModesOf(blueprint.parameters, blueprint.parameterInheritMode);
  const settings =
    parameterInheritModes === undefined
      ? blueprint.settings
      : { ...blueprint.settings, parameterInheritModes };
  const fleet: ArbitraryFleetFile = {
    ...(settings === undefined ? {} : { settings }),
    parameters: structuredClone(blueprint.parameters),
    techniques,
    directives,
    relationships,
    rules,
    groups,
    nodes,
    relays: relayId === undefined ? [] : [{ id: relayId, policyServer: 'root' }],
  };
  // Plain JSON, no shared references between the blueprint's constants and the fleet.
  return JSON.parse(JSON.stringify(fleet)) as ArbitraryFleetFile;
}

/** A small seeded PRNG (mulberry32): the same seed gives the same sequence in [0, 1). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type JsonRecord = { [key: string]: unknown };

function isRecord(value: unknown): value is JsonRecord {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const result = [...items];
  for (let index = result.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1));
    [result[index], result[other]] = [result[other] as T, result[index] as T];
  }
  return result;
}

/** The same map with its keys in another order (the values untouched, deep-copied). */
function shuffledKeys(value: unknown, random: () => number): unknown {
  if (!isRecord(value)) return structuredClone(value);
  return Object.fromEntries(
    shuffled(Object.keys(value), random).map((key) => [key, structuredClone(value[key])]),
  );
}

function shuffleList(value: unknown, random: () => number, each: (item: unknown) => unknown): unknown {
  return Array.isArray(value) ? shuffled(value, random).map(each) : structuredClone(value);
}

function shuffleTarget(target: unknown, random: () => number): unknown {
  const inner = (value: unknown): unknown => shuffleTarget(value, random);
  if (Array.isArray(target)) return shuffleList(target, random, inner);
  if (!isRecord(target)) return structuredClone(target);
  if ('or' in target) return { or: shuffleList(target['or'], random, inner) };
  if ('and' in target) return { and: shuffleList(target['and'], random, inner) };
  const result: JsonRecord = { include: inner(target['include']) };
  if ('exclude' in target) result['exclude'] = inner(target['exclude']);
  return result;
}

function withFields(
  entity: unknown,
  random: () => number,
  fields: Readonly<Record<string, (value: unknown) => unknown>>,
): unknown {
  if (!isRecord(entity)) return structuredClone(entity);
  // The order of an entity's own fields means nothing either.
  const result: JsonRecord = {};
  for (const key of shuffled(Object.keys(entity), random)) {
    const transform = fields[key];
    result[key] = transform ? transform(entity[key]) : structuredClone(entity[key]);
  }
  return result;
}

/**
 * A deep copy of a fleet file with every SET-LIKE array shuffled: the collections, technique
 * `parameters`, rule `directives`, targets (bare lists, `or`/`and` lists, `include`/`exclude`),
 * group `nodes`, criteria `all`/`any` lists and `in` value lists, directive
 * `before`/`require`/`notify`/`subscribe`. The keys of name → value maps (global parameters,
 * directive parameters, first level of properties and facts) and of every entity are reordered too.
 * NOT shuffled, their order being meaning: technique `promises`/`refresh`, and every JSON value of
 * a property, parameter or fact.
 */
export function shuffleSetLikeArrays<T>(fleet: T, random: () => number): T {
  const list =
    (each: (item: unknown) => unknown = (item) => structuredClone(item)) =>
    (value: unknown): unknown =>
      shuffleList(value, random, each);
  const map = (value: unknown): unknown => shuffledKeys(value, random);
  const entity =
    (fields: Readonly<Record<string, (value: unknown) => unknown>>) =>
    (value: unknown): unknown =>
      withFields(value, random, fields);

  const criterion = entity({
    value: (value) => (Array.isArray(value) ? shuffled(value, random).map((v) => structuredClone(v)) : value),
  });
  // A criterion `value` that is not an `in` list is a JSON value: never shuffled.
  const criterionKeepingValues = (value: unknown): unknown => {
    if (isRecord(value) && value['op'] !== 'in') return withFields(value, random, {});
    return criterion(value);
  };
  const relations = { before: list(), require: list(), notify: list(), subscribe: list() };

  return withFields(fleet, random, {
    settings: map,
    parameters: map,
    techniques: list(entity({ parameters: list(entity({})) })),
    directives: list(entity({ parameters: map, ...relations })),
    relationships: list(entity({})),
    rules: list(entity({ directives: list(), targets: (value) => shuffleTarget(value, random) })),
    groups: list(
      entity({
        nodes: list(),
        criteria: entity({ all: list(criterionKeepingValues), any: list(criterionKeepingValues) }),
        properties: map,
      }),
    ),
    nodes: list(entity({ facts: map, properties: map })),
    relays: list(entity({})),
  }) as T;
}

function optional<K extends string, V>(key: K, value: V | undefined): { [key in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [key in K]?: V };
}
