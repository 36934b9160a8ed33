import type { RelationshipInput, RuleInput } from '../fleet-file';
import { mulberry32 } from '../random';
import type { Random } from '../random';
import { LOCATIONS, OWNERS, ROLES } from './catalog';
import type { BenchDirective, Metaparameter } from './directives';
import type { BenchGroup, GroupKind } from './groups';
import { LANDMARK_GROUPS } from './groups';
import { relayId } from './nodes';
import type { BenchSizes } from './sizes';
import { integerBetween, mixSeed, pad, picker, shuffle, STREAMS } from './sizes';

type Target = NonNullable<RuleInput['targets']>;

interface RulePlan {
  readonly label: string;
  readonly targets: Target;
  /** Directives it should carry, the landmark one included. */
  size: number;
  readonly landmark?: 'all' | 'ten' | 'one';
  enabled: boolean;
}

export interface PlannedRules {
  readonly rules: RuleInput[];
  readonly relationships: RelationshipInput[];
}

const group = (id: string): string => `group:${id}`;

/**
 * Rules that reach a large share of the fleet: everything, an environment, an OS, a datacenter, a
 * role, a relay. They carry 1 or 2 directives (plus a landmark one): every node gets several of
 * them, so they set the floor of the per-node policy count. Their number grows with `rules`.
 */
function broadRules(sizes: BenchSizes, random: Random): RulePlan[] {
  const plans: RulePlan[] = [];
  const scaled = (share: number, minimum: number, maximum: number): number =>
    Math.min(maximum, Math.max(minimum, Math.round(sizes.rules * share)));
  const add = (label: string, targets: Target, landmark?: 'all' | 'ten' | 'one'): void => {
    const size = integerBetween(random, 1, 2);
    plans.push(
      landmark
        ? { label, targets, size: size + 1, landmark, enabled: true }
        : { label, targets, size, enabled: true },
    );
  };
  add('Global baseline', ['special:all'], 'all');
  add('Global hardening', ['special:all']);
  add('Global inventory', { include: 'special:all' });
  add('Managed nodes', ['special:all_exceptPolicyServers']);
  add('Not in development', { include: 'special:all', exclude: group('g-env-dev') });
  add('Canary 10%', [group(LANDMARK_GROUPS.tenPercent)], 'ten');
  add('Canary 1%', [group(LANDMARK_GROUPS.onePercent)], 'one');
  add('Buckets 20 to 24', [group(LANDMARK_GROUPS.criteria)]);
  for (const environment of ['prod', 'staging', 'dev'])
    add(`Environment ${environment}`, [group(`g-env-${environment}`)]);
  const osGroups = [
    'g-os-debian-family',
    'g-os-rhel',
    'g-os-debian-12plus',
    'g-os-el-lt9',
    'g-os-rocky',
    'g-os-sles',
    'g-arch-aarch64',
  ];
  for (const id of osGroups.slice(0, scaled(0.0175, 2, osGroups.length)))
    add(`Platform ${id.slice(2)}`, [group(id)]);
  add('European production', { and: [group('g-region-eu'), group('g-env-prod')] });
  for (const location of LOCATIONS.slice(0, scaled(0.05, 1, LOCATIONS.length)))
    add(`Datacenter ${location.name}`, [group(`g-loc-${location.id}`)]);
  for (const role of ROLES.slice(0, scaled(0.075, 1, ROLES.length)))
    add(`Role ${role.id}`, [group(`g-role-${role.id}`)]);
  const relayRules = Math.min(sizes.relays, scaled(0.025, 1, sizes.relays));
  for (let index = 0; index < relayRules; index++)
    add(`Behind ${relayId(index)}`, [`policyServer:${relayId(index)}`]);
  if (sizes.relays >= 2)
    add('Behind the first relays', { or: [`policyServer:${relayId(0)}`, `policyServer:${relayId(1)}`] });
  add('Served by root', ['policyServer:root']);
  for (const owner of OWNERS.slice(0, scaled(0.01, 0, OWNERS.length)))
    add(`Owner ${owner}`, [group(`g-owner-${owner}`)]);
  return plans;
}

/**
 * Small rules target groups of a few dozen to a few hundred nodes (at 100,000 nodes); the big
 * fact groups (environment × OS, regular expressions) only ever appear as exclusions.
 */
const pickSmallKind = picker<GroupKind>([
  ['shard', 30],
  ['shards', 12],
  ['location-role', 20],
  ['subgroup', 10],
  ['nested', 4],
  ['static', 8],
  ['bucket-range', 2],
]);

function smallTarget(random: Random, byKind: ReadonlyMap<GroupKind, readonly string[]>): Target {
  const pick = (): string => {
    for (;;) {
      const ids = byKind.get(pickSmallKind(random));
      if (ids && ids.length > 0) return ids[Math.floor(random() * ids.length)] as string;
    }
  };
  const form = random();
  const first = group(pick());
  if (form < 0.75) return [first];
  if (form < 0.85) {
    const big = [...(byKind.get('env-os') ?? []), ...(byKind.get('regex') ?? []), 'g-env-dev'];
    return { include: first, exclude: group(big[Math.floor(random() * big.length)] as string) };
  }
  if (form < 0.93) return { and: [first, group('g-env-prod')] };
  return [first, group(pick())];
}

/**
 * The rules, with every directive carried by at least one of them. Rule sizes are drawn so that
 * the slots exceed the directives by ~25%; each directive takes one slot, and the spare slots go
 * to directives drawn Zipf-like: most directives sit on one rule, a few on dozens.
 */
export function benchRules(
  sizes: BenchSizes,
  groups: readonly BenchGroup[],
  directives: readonly BenchDirective[],
): PlannedRules {
  const random = mulberry32(mixSeed(sizes.seed, STREAMS.rules));
  const plans = broadRules(sizes, random);
  if (plans.length >= sizes.rules)
    throw new RangeError(`bench fleet: rules must be more than ${plans.length} (the broad rules alone)`);

  const byKind = new Map<GroupKind, string[]>();
  for (const { kind, input } of groups) {
    const ids = byKind.get(kind) ?? [];
    ids.push(input.id);
    byKind.set(kind, ids);
  }
  const smallCount = sizes.rules - plans.length;
  const ordinary = directives.filter((directive) => !directive.landmark);
  const broadCapacity = plans.reduce((sum, plan) => sum + plan.size - (plan.landmark ? 1 : 0), 0);
  const mean = Math.min(10, Math.max(1, (ordinary.length * 1.25 - broadCapacity) / smallCount));
  const spread = Math.min(mean - 1, 10 - mean);
  const smallPlans: RulePlan[] = [];
  for (let index = 0; index < smallCount; index++) {
    const size = Math.round(mean + (random() * 2 - 1) * spread);
    smallPlans.push({
      label: 'Small',
      targets: smallTarget(random, byKind),
      size: Math.min(10, Math.max(1, size)),
      enabled: true,
    });
  }
  // Too few slots for one per directive (many directives, few rules): grow the small rules.
  let capacity = broadCapacity + smallPlans.reduce((sum, plan) => sum + plan.size, 0);
  for (let index = 0; capacity < ordinary.length; index = (index + 1) % smallPlans.length, capacity++)
    (smallPlans[index] as RulePlan).size++;
  const disabled = Math.max(1, Math.round(smallCount * 0.01));
  for (const plan of shuffle(random, [...smallPlans]).slice(0, disabled)) plan.enabled = false;

  const all = [...plans, ...smallPlans];
  const carried = assignDirectives(
    mulberry32(mixSeed(sizes.seed, STREAMS.assignment)),
    all,
    directives,
    ordinary,
  );
  addMetaparameters(random, all, carried, directives);

  const rules = all.map((plan, index): RuleInput => {
    const label = plan.label === 'Small' ? `Small ${pad(index, 3)}` : plan.label;
    const rule: RuleInput = {
      id: `r-${pad(index, 3)}-${label
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-')
        .replace(/-$/, '')}`,
      name: `${pad(index, 3)}. ${label}`,
      directives: [...(carried[index] as Set<number>)]
        .sort((a, b) => a - b)
        .map((d) => (directives[d] as BenchDirective).input.id),
      targets: plan.targets,
    };
    if (!plan.enabled) rule.enabled = false;
    return rule;
  });
  return { rules, relationships: fleetRelationships(random, carried, directives, sizes) };
}

function assignDirectives(
  random: Random,
  plans: readonly RulePlan[],
  directives: readonly BenchDirective[],
  ordinary: readonly BenchDirective[],
): Set<number>[] {
  const carried = plans.map(() => new Set<number>());
  const slots: number[] = [];
  plans.forEach((plan, ruleIndex) => {
    if (plan.landmark) {
      const landmark = directives.find((directive) => directive.landmark === plan.landmark) as BenchDirective;
      (carried[ruleIndex] as Set<number>).add(landmark.index);
    }
    for (let slot = 0; slot < plan.size - (plan.landmark ? 1 : 0); slot++) slots.push(ruleIndex);
  });
  shuffle(random, slots);
  const once = shuffle(
    random,
    ordinary.map((directive) => directive.index),
  );
  once.forEach((directiveIndex, slot) => (carried[slots[slot] as number] as Set<number>).add(directiveIndex));

  const ranks = shuffle(random, [...once]);
  const zipf = picker(ranks.map((directiveIndex, rank) => [directiveIndex, 1 / (rank + 1)] as const));
  for (const ruleIndex of slots.slice(once.length)) {
    const set = carried[ruleIndex] as Set<number>;
    for (let attempt = 0; attempt < 20; attempt++) {
      const candidate = zipf(random);
      if (!set.has(candidate)) {
        set.add(candidate);
        break;
      }
    }
  }
  return carried;
}

/**
 * Metaparameters are strict: a directive that names another fails every node where the other is
 * not applied. So A names B only when every rule carrying A also carries B, B is enabled and
 * multi-instance (never overridden). Edges always go from a lower to a higher technique index:
 * whatever the node's mix of policies, the graph has no cycle.
 */
function addMetaparameters(
  random: Random,
  plans: readonly RulePlan[],
  carried: readonly Set<number>[],
  directives: readonly BenchDirective[],
): void {
  const rulesOf = new Map<number, number[]>();
  carried.forEach((set, ruleIndex) => {
    for (const directiveIndex of set)
      rulesOf.set(directiveIndex, [...(rulesOf.get(directiveIndex) ?? []), ruleIndex]);
  });
  const eligible = (directive: BenchDirective): boolean =>
    directive.input.enabled !== false && directive.technique.generation !== 'unique';
  const wanted = Math.max(1, Math.round(directives.length * 0.01));
  let added = 0;
  for (const ruleIndex of shuffle(
    random,
    plans.map((_, index) => index),
  )) {
    if (added >= wanted) break;
    const members = [...(carried[ruleIndex] as Set<number>)]
      .map((index) => directives[index] as BenchDirective)
      .filter(eligible);
    if (members.length < 2) continue;
    const from = members[Math.floor(random() * members.length)] as BenchDirective;
    const fromRules = rulesOf.get(from.index) ?? [];
    const candidates = members.filter(
      (other) =>
        other.technique.index !== from.technique.index &&
        fromRules.every((rule) => (carried[rule] as Set<number>).has(other.index)),
    );
    if (candidates.length === 0) continue;
    const to = candidates[Math.floor(random() * candidates.length)] as BenchDirective;
    const kind: Metaparameter =
      from.technique.index < to.technique.index
        ? random() < 0.7
          ? 'before'
          : 'notify'
        : random() < 0.7
          ? 'require'
          : 'subscribe';
    const list = from.input[kind] ?? [];
    if (list.includes(to.input.id)) continue;
    from.input[kind] = [...list, to.input.id];
    added++;
  }
}

/** Fleet-wide relationships between directives of one rule: they order both ends where both apply. */
function fleetRelationships(
  random: Random,
  carried: readonly Set<number>[],
  directives: readonly BenchDirective[],
  sizes: BenchSizes,
): RelationshipInput[] {
  const relationships: RelationshipInput[] = [];
  const seen = new Set<string>();
  const wanted = Math.max(1, Math.round(sizes.directives * 0.005));
  for (let attempt = 0; attempt < wanted * 20 && relationships.length < wanted; attempt++) {
    const members = [...(carried[Math.floor(random() * carried.length)] as Set<number>)].map(
      (index) => directives[index] as BenchDirective,
    );
    if (members.length < 2) continue;
    const [a, b] = shuffle(random, members) as [BenchDirective, BenchDirective];
    if (a.technique.index === b.technique.index) continue;
    const [from, to] = a.technique.index < b.technique.index ? [a, b] : [b, a];
    const kind = random() < 0.8 ? '->' : '~>';
    const key = `${from.input.id} ${to.input.id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    relationships.push({ from: from.input.id, to: to.input.id, kind });
  }
  return relationships;
}
