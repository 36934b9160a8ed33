// Test support: the built worker, the demo fleet validated, and seeded change sets over a fleet.
import { join } from 'node:path';
import { validateFleet } from '@policygen/engine';
import type { Fleet, Json, NodeResult } from '@policygen/engine';
import { buildDemoFleet, mulberry32 } from '@policygen/fleets';
import type { Random } from '@policygen/fleets';

/** Written by `npm run build`; the tests never build it themselves. */
export const BUILT_WORKER = join(__dirname, '..', '..', '..', '..', 'dist', 'cli', 'generation-worker.js');

export function validFleet(input: unknown): Fleet {
  const result = validateFleet(input);
  if (!result.ok) throw new Error(result.issues.map((issue) => `${issue.path}: ${issue.message}`).join('\n'));
  return result.fleet;
}

export function demoFleet(): Fleet {
  return validFleet(buildDemoFleet());
}

/** A result without its inputsKey, which is local to the engine that computed it. */
export function comparable(result: NodeResult): Omit<NodeResult, 'inputsKey'> {
  const { inputsKey: _key, ...rest } = result;
  return rest;
}

function pick<T>(random: Random, items: readonly T[]): T {
  const item = items[Math.floor(random() * items.length)];
  if (item === undefined) throw new Error('pick: no items');
  return item;
}

type Edit = (random: Random, fleet: Fleet, serial: number) => Record<string, unknown>;

const EDITS: readonly Edit[] = [
  (random, fleet) => {
    const node = pick(random, fleet.nodes);
    const owner = pick(random, ['team-storefront', 'team-payments', 'team-search', 'team-x']);
    return { upsert: { nodes: [{ ...node, properties: { ...node.properties, owner } }] } };
  },
  (random, fleet) => {
    const node = pick(random, fleet.nodes);
    const role = pick(random, ['web', 'app', 'db', 'cache']);
    return { upsert: { nodes: [{ ...node, facts: { ...node.facts, role } }] } };
  },
  (random, fleet) => {
    const directive = pick(random, fleet.directives);
    return { upsert: { directives: [{ ...directive, priority: Math.floor(random() * 11) }] } };
  },
  (random, fleet) => {
    const directive = pick(random, fleet.directives);
    return { upsert: { directives: [{ ...directive, enabled: !directive.enabled }] } };
  },
  (random, fleet) => {
    const rule = pick(random, fleet.rules);
    return { upsert: { rules: [{ ...rule, enabled: !rule.enabled }] } };
  },
  (random, fleet, serial) => {
    const name = pick(random, Object.keys(fleet.parameters));
    const value = fleet.parameters[name];
    const changed: Json = typeof value === 'string' ? `${value}-${serial}` : { replaced: serial };
    return { upsert: { parameters: { [name]: changed } } };
  },
  (random, fleet, serial) => {
    const group = pick(random, fleet.groups);
    return { upsert: { groups: [{ ...group, properties: { ...group.properties, tier: `t${serial}` } }] } };
  },
  (random, fleet) => ({ delete: { nodes: [pick(random, fleet.nodes).id] } }),
  (random, fleet, serial) => {
    const node = pick(random, fleet.nodes);
    const id = `extra-${serial}`;
    return { upsert: { nodes: [{ ...node, id, hostname: `${id}.example.com` }] } };
  },
  (random) => ({
    upsert: { settings: { ordering: pick(random, ['alphanumeric', 'title-hash', 'random']) } },
  }),
];

/**
 * Change sets over the fleet `current()` returns at each call, from a seed: one edit each, of a
 * random kind. Some are invalid (a deleted node still listed by a group): callers skip those.
 */
export function* randomChangeSets(seed: number, current: () => Fleet): Generator<Record<string, unknown>> {
  const random = mulberry32(seed);
  for (let serial = 1; ; serial++) yield pick(random, EDITS)(random, current(), serial);
}
