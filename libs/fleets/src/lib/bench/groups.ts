import { matchesCriterion } from '@policygen/engine';
import type { Criterion, FleetNode, Json } from '@policygen/engine';
import type { CriteriaInput, CriterionInput, GroupInput, NodeInput } from '../fleet-file';
import { mulberry32 } from '../random';
import type { Random } from '../random';
import { ENVIRONMENTS, LOCATIONS, OPERATING_SYSTEMS, OS_NAMES, OWNERS, ROLES } from './catalog';
import { nodeId, relayId } from './nodes';
import type { BenchSizes } from './sizes';
import { integerBetween, mixSeed, pad, picker, STREAMS } from './sizes';

export type GroupKind =
  | 'os'
  | 'arch'
  | 'env'
  | 'region'
  | 'location'
  | 'role'
  | 'landmark'
  | 'owner'
  | 'subgroup'
  | 'nested'
  | 'static'
  | 'shard'
  | 'shards'
  | 'location-role'
  | 'env-os'
  | 'bucket-range'
  | 'regex';

export interface BenchGroup {
  readonly input: GroupInput;
  readonly kind: GroupKind;
}

export const LANDMARK_GROUPS = {
  tenPercent: 'g-bucket-lt10',
  onePercent: 'g-bucket-3',
  criteria: 'g-bucket-20-24',
} as const;

/** Replaces `g-bucket-20-24`'s criteria: one more bucket, i.e. 1% more of the ordinary nodes. */
export const CRITERIA_REPLACEMENT: CriteriaInput = {
  all: [
    { fact: 'bucket', op: 'ge', value: 20 },
    { fact: 'bucket', op: 'lt', value: 26 },
  ],
};

const PACKAGERS: Readonly<Record<string, string>> = { debian: 'apt', redhat: 'dnf', suse: 'zypper' };

type FactCriterion = Extract<CriterionInput, { fact: string }>;

function fact(path: string, op: FactCriterion['op'], value?: Json): FactCriterion {
  return value === undefined ? { fact: path, op } : { fact: path, op, value };
}

function slug(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, '-');
}

/**
 * The fixed families: one group per OS, architecture, environment, region, datacenter and role,
 * the landmark bucket groups and the owner groups. Each property namespace is set by one family
 * whose groups are disjoint (a node is in one datacenter, one role...), so no node ever gets a
 * namespace from two unrelated groups.
 */
function fixedGroups(): BenchGroup[] {
  const groups: BenchGroup[] = [];
  const add = (kind: GroupKind, input: GroupInput): void => {
    groups.push({ kind, input });
  };
  for (const name of OS_NAMES) {
    const family = OPERATING_SYSTEMS.find(([os]) => os.name === name)?.[0].family ?? 'debian';
    add('os', {
      id: `g-os-${slug(name)}`,
      name: `OS ${name}`,
      criteria: { all: [fact('os.name', 'eq', name)] },
      properties: { os_profile: { family, packager: PACKAGERS[family] ?? 'none' } },
    });
  }
  add('os', {
    id: 'g-os-debian-12plus',
    name: 'Debian 12 and later',
    criteria: { all: [fact('os.name', 'eq', 'Debian'), fact('os.version', 'ge', '12')] },
  });
  add('os', {
    id: 'g-os-el-lt9',
    name: 'Enterprise Linux before 9',
    criteria: { all: [fact('os.name', 'in', ['RHEL', 'Rocky']), fact('os.version', 'lt', '9')] },
  });
  add('os', {
    id: 'g-os-debian-family',
    name: 'Debian family',
    criteria: { any: [fact('os.name', 'regex', '^(Debian|Ubuntu)$')] },
  });
  for (const arch of ['x86_64', 'aarch64']) {
    add('arch', {
      id: `g-arch-${slug(arch)}`,
      name: `Architecture ${arch}`,
      criteria: { all: [fact('arch', 'eq', arch)] },
    });
  }
  for (const [environment] of ENVIRONMENTS) {
    add('env', {
      id: `g-env-${environment}`,
      name: `Environment ${environment}`,
      criteria: { all: [fact('env', 'eq', environment)] },
      properties: {
        environment: { name: environment, monitoring: environment === 'prod' ? '24x7' : 'business-hours' },
      },
    });
  }
  for (const region of ['eu', 'us', 'apac'] as const) {
    const locations = LOCATIONS.filter((location) => location.region === region).map(
      (location) => location.id,
    );
    add('region', {
      id: `g-region-${region}`,
      name: `Region ${region.toUpperCase()}`,
      criteria: { all: [fact('location', 'in', locations)] },
      properties: { region: { name: region } },
    });
  }
  for (const location of LOCATIONS) {
    add('location', {
      id: `g-loc-${location.id}`,
      name: `Datacenter ${location.name}`,
      criteria: { all: [fact('location', 'eq', location.id)] },
      properties: { datacenter: { name: location.name, dns: location.dns, timezone: location.timezone } },
    });
  }
  for (const role of ROLES) {
    add('role', {
      id: `g-role-${role.id}`,
      name: `Role ${role.id}`,
      criteria: { all: [fact('role', 'eq', role.id)] },
      properties: { role_profile: { name: role.id, tier: role.tier } },
    });
  }
  add('landmark', {
    id: LANDMARK_GROUPS.tenPercent,
    name: 'Canary 10%',
    criteria: { all: [fact('bucket', 'lt', 10)] },
  });
  add('landmark', {
    id: LANDMARK_GROUPS.onePercent,
    name: 'Canary 1%',
    criteria: { all: [fact('bucket', 'eq', 3)] },
  });
  add('landmark', {
    id: LANDMARK_GROUPS.criteria,
    name: 'Buckets 20 to 24',
    criteria: { all: [fact('bucket', 'ge', 20), fact('bucket', 'lt', 25)] },
  });
  for (const owner of OWNERS) {
    add('owner', {
      id: `g-owner-${owner}`,
      name: `Owned by ${owner}`,
      criteria: { all: [{ property: 'owner', op: 'eq', value: owner }] },
    });
  }
  return groups;
}

// Uniform, unlike the nodes' draw: crossing a big datacenter with a big role would make big groups.
const pickLocation = (random: Random): number => Math.floor(random() * LOCATIONS.length);
const pickRole = (random: Random): number => Math.floor(random() * ROLES.length);

/** How the groups beyond the fixed families and the sub/static share are spread. */
const pickVariableKind = picker<GroupKind>([
  ['shard', 40],
  ['shards', 10],
  ['location-role', 25],
  ['env-os', 5],
  ['bucket-range', 12],
  ['regex', 8],
]);

/**
 * Every group of the fleet. About 5% are subgroups (`all` containing `{group: parent}`), 5% are
 * static, the rest select by facts. Property values of the variable families are functions of
 * their criteria only, so two groups that happen to select the same nodes agree on them.
 */
export function benchGroups(sizes: BenchSizes): BenchGroup[] {
  const random = mulberry32(mixSeed(sizes.seed, STREAMS.groups));
  const groups = fixedGroups();
  const ids = new Set(groups.map((group) => group.input.id));
  const uniqueId = (base: string): string => {
    let id = base;
    for (let suffix = 2; ids.has(id); suffix++) id = `${base}-${suffix}`;
    ids.add(id);
    return id;
  };
  const variable = sizes.groups - groups.length;
  const subgroupCount = Math.min(variable, Math.max(1, Math.round(sizes.groups * 0.05)));
  const staticCount = Math.min(variable - subgroupCount, Math.max(1, Math.round(sizes.groups * 0.05)));
  const restCount = variable - subgroupCount - staticCount;

  const locationRoleSubgroups: string[] = [];
  for (let index = 0; index < subgroupCount; index++) {
    if (locationRoleSubgroups.length > 0 && random() < 0.3) {
      const parent = locationRoleSubgroups[Math.floor(random() * locationRoleSubgroups.length)] as string;
      const refinement = random() < 0.6 ? fact('env', 'eq', 'prod') : fact('arch', 'eq', 'aarch64');
      groups.push({
        kind: 'nested',
        input: {
          id: uniqueId(`${parent}-${String(refinement.value)}`),
          name: `${parent} (${String(refinement.value)})`,
          criteria: { all: [{ group: parent }, refinement] },
        },
      });
      continue;
    }
    const locationIndex = pickLocation(random);
    const roleIndex = pickRole(random);
    const location = LOCATIONS[locationIndex] as (typeof LOCATIONS)[number];
    const role = ROLES[roleIndex] as (typeof ROLES)[number];
    const id = uniqueId(`g-sub-${location.id}-${role.id}`);
    locationRoleSubgroups.push(id);
    groups.push({
      kind: 'subgroup',
      input: {
        id,
        name: `${location.name} ${role.id} servers`,
        criteria: { all: [{ group: `g-loc-${location.id}` }, fact('role', 'eq', role.id)] },
        // Refines its parent datacenter's resolver: parent and child, never a conflict.
        properties: { datacenter: { dns: `10.${locationIndex + 10}.${roleIndex + 1}.53` } },
      },
    });
  }

  const ordinaryNodes = sizes.nodes - sizes.relays;
  for (let index = 0; index < staticCount; index++) {
    const members = new Set<string>();
    const size = integerBetween(random, 3, 10);
    while (members.size < size) members.add(nodeId(Math.floor(random() * ordinaryNodes)));
    if (sizes.relays > 0 && random() < 0.2) members.add(relayId(Math.floor(random() * sizes.relays)));
    const id = uniqueId(`g-static-${pad(index, 3)}`);
    const input: GroupInput = { id, name: `Hand-picked ${pad(index, 3)}`, nodes: [...members].sort() };
    // A namespace of its own: static members overlap other static groups freely.
    if (random() < 0.5) input.properties = { [`lab_${pad(index, 3)}`]: { wiped: 'nightly' } };
    groups.push({ kind: 'static', input });
  }

  for (let index = 0; index < restCount; index++) {
    const kind = pickVariableKind(random);
    groups.push({ kind, input: variableGroup(kind, random, uniqueId) });
  }

  // A few disabled groups: the rules that name them apply nowhere.
  const disableable = groups.filter((group) => group.kind === 'shard' || group.kind === 'location-role');
  const disabledCount = Math.max(1, Math.round(restCount * 0.005));
  for (let index = 0; index < disabledCount && disableable.length > 0; index++) {
    const group = disableable.splice(Math.floor(random() * disableable.length), 1)[0] as BenchGroup;
    group.input.enabled = false;
  }
  return groups;
}

function variableGroup(kind: GroupKind, random: Random, uniqueId: (base: string) => string): GroupInput {
  switch (kind) {
    case 'shard': {
      const shard = Math.floor(random() * 1000);
      return {
        id: uniqueId(`g-shard-${pad(shard, 3)}`),
        name: `Shard ${shard}`,
        criteria: { all: [fact('shard', 'eq', shard)] },
        properties: { shard_cfg: { slot: shard % 16, shard } },
      };
    }
    case 'shards': {
      const shards = new Set<number>();
      const size = integerBetween(random, 2, 5);
      while (shards.size < size) shards.add(Math.floor(random() * 1000));
      const list = [...shards].sort((a, b) => a - b);
      return {
        id: uniqueId(`g-shards-${list.map((shard) => pad(shard, 3)).join('-')}`),
        name: `Shards ${list.join(', ')}`,
        criteria: { all: [fact('shard', 'in', list)] },
      };
    }
    case 'location-role': {
      const location = LOCATIONS[pickLocation(random)] as (typeof LOCATIONS)[number];
      const role = ROLES[pickRole(random)] as (typeof ROLES)[number];
      return {
        id: uniqueId(`g-lr-${location.id}-${role.id}`),
        name: `${role.id} in ${location.name}`,
        criteria: { all: [fact('location', 'eq', location.id), fact('role', 'eq', role.id)] },
      };
    }
    case 'env-os': {
      const environment = (
        ENVIRONMENTS[Math.floor(random() * ENVIRONMENTS.length)] as readonly [string, number]
      )[0];
      const os = OS_NAMES[Math.floor(random() * OS_NAMES.length)] as string;
      return {
        id: uniqueId(`g-eo-${environment}-${slug(os)}`),
        name: `${os} in ${environment}`,
        criteria: { all: [fact('env', 'eq', environment), fact('os.name', 'eq', os)] },
      };
    }
    case 'bucket-range': {
      const low = integerBetween(random, 30, 95);
      const high = Math.min(100, low + integerBetween(random, 1, 3));
      return {
        id: uniqueId(`g-buckets-${low}-${high - 1}`),
        name: `Buckets ${low} to ${high - 1}`,
        criteria: { all: [fact('bucket', 'ge', low), fact('bucket', 'lt', high)] },
      };
    }
    default: {
      // regex: on the role (whole words) or on the datacenter prefix.
      if (random() < 0.5) {
        const roles = new Set<string>();
        const size = integerBetween(random, 2, 3);
        while (roles.size < size) roles.add((ROLES[pickRole(random)] as (typeof ROLES)[number]).id);
        const list = [...roles].sort();
        return {
          id: uniqueId(`g-rx-role-${list.join('-')}`),
          name: `Roles ${list.join(', ')}`,
          criteria: { all: [fact('role', 'regex', `^(${list.join('|')})$`)] },
        };
      }
      const prefixes = new Set<string>();
      const size = integerBetween(random, 1, 2);
      while (prefixes.size < size)
        prefixes.add((LOCATIONS[pickLocation(random)] as (typeof LOCATIONS)[number]).id.slice(0, 3));
      const list = [...prefixes].sort();
      return {
        id: uniqueId(`g-rx-loc-${list.join('-')}`),
        name: `Datacenters ${list.join(', ')}*`,
        criteria: { any: [fact('location', 'regex', `^(${list.join('|')})`)] },
      };
    }
  }
}

/**
 * The groups one node belongs to, by the groups' own criteria: for the landmarks, one node at a
 * time (O(groups)), never the whole fleet, with the engine's test of each criterion.
 */
export function groupsOfNode(node: NodeInput, groups: readonly BenchGroup[]): Set<string> {
  const byId = new Map(groups.map((group) => [group.input.id, group.input]));
  const memo = new Map<string, boolean>();
  const isMember = (groupId: string): boolean => {
    const known = memo.get(groupId);
    if (known !== undefined) return known;
    const group = byId.get(groupId);
    let member = false;
    if (group) {
      member = (group.nodes ?? []).includes(node.id);
      const criteria = group.criteria;
      if (!member && criteria) {
        const list = 'all' in criteria ? criteria.all : criteria.any;
        const test = (criterion: CriterionInput): boolean =>
          'group' in criterion ? isMember(criterion.group) : matches(criterion, node);
        member = list.length > 0 && ('all' in criteria ? list.every(test) : list.some(test));
      }
    }
    memo.set(groupId, member);
    return member;
  };
  return new Set(groups.map((group) => group.input.id).filter(isMember));
}

/** The engine's own test of a criterion, on a node as the engine sees it (defaults applied). */
function matches(criterion: Exclude<CriterionInput, { group: string }>, node: NodeInput): boolean {
  const entity = { ...node, facts: node.facts ?? {}, properties: node.properties ?? {} } as FleetNode;
  return matchesCriterion(criterion as Exclude<Criterion, { group: string }>, entity, regexes);
}

const regexes = new Map<string, RegExp>();
