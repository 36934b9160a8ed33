import type { Json } from '@policygen/engine';
import type { NodeInput, RelayInput } from '../fleet-file';
import { mulberry32 } from '../random';
import { ARCHITECTURES, DOMAIN, ENVIRONMENTS, LOCATIONS, OPERATING_SYSTEMS, OWNERS, ROLES } from './catalog';
import { mixSeed, pad, picker } from './sizes';

const pickLocation = picker(LOCATIONS.map((location, index) => [index, location.weight] as const));
const pickRole = picker(ROLES.map((role) => [role.id, role.weight] as const));
const pickEnvironment = picker(ENVIRONMENTS);
const pickOs = picker(OPERATING_SYSTEMS);
const pickArch = picker(ARCHITECTURES);
const pickOwner = picker(OWNERS.map((owner) => [owner, 1] as const));

/** Shares of nodes out of the ordinary states: a few ignored and empty-policies nodes. */
const IGNORED_SHARE = 0.003;
const EMPTY_POLICIES_SHARE = 0.002;

export function nodeId(index: number): string {
  return `node-${pad(index, 6)}`;
}

export function relayId(index: number): string {
  return `relay-${pad(index + 1, 2)}`;
}

/**
 * The relay tree: the first ~40% of the relays under root, each of the others under one of
 * those, so that the tree has two levels.
 */
export function benchRelays(relays: number): RelayInput[] {
  const topLevel = Math.max(1, Math.ceil(relays * 0.4));
  return Array.from({ length: relays }, (_, index) => ({
    id: relayId(index),
    policyServer: index < topLevel ? 'root' : relayId(index % topLevel),
  }));
}

/** Datacenters spread over root and the relays, round-robin: relay k serves datacenters k, k+r+1... */
export function policyServerOf(locationIndex: number, relays: number): string {
  const server = locationIndex % (relays + 1);
  return server === 0 ? 'root' : relayId(server - 1);
}

/**
 * Ordinary node number `index`: a pure function of (seed, relays, index), so that the fleet's
 * nodes and `buildBenchNodes`' extra nodes share one distribution and never depend on the other
 * sizes. `bucket` (index mod 100) and `shard` (index mod 1000) make group sizes exact by construction.
 */
export function benchNode(seed: number, relays: number, index: number): NodeInput {
  const random = mulberry32(mixSeed(seed, index));
  const locationIndex = pickLocation(random);
  const location = LOCATIONS[locationIndex] as (typeof LOCATIONS)[number];
  const role = pickRole(random);
  const environment = pickEnvironment(random);
  const os = pickOs(random);
  const arch = pickArch(random);
  const id = nodeId(index);

  const properties: Record<string, Json> = {};
  if (random() < 0.3) properties['owner'] = pickOwner(random);
  if (random() < 0.5) properties['contact'] = `${role}-oncall-${index % 50}@example.com`;
  if ((role === 'app' || role === 'api') && random() < 0.4)
    properties['app'] = { port: 8000 + (index % 100) };
  if (random() < 0.002) properties['policygen_ordering'] = 'title-hash';

  const stateDraw = random();
  const state =
    stateDraw < IGNORED_SHARE
      ? 'ignored'
      : stateDraw < IGNORED_SHARE + EMPTY_POLICIES_SHARE
        ? 'empty-policies'
        : 'enabled';

  return {
    id,
    hostname: `${id}.${location.id}.${DOMAIN}`,
    policyServer: policyServerOf(locationIndex, relays),
    state,
    facts: {
      os: { name: os.name, version: os.version },
      location: location.id,
      role,
      env: environment,
      arch,
      bucket: index % 100,
      shard: index % 1000,
      cpus: 2 ** (1 + Math.floor(random() * 5)),
    },
    properties,
  };
}

/**
 * A relay's own node (its id is the relay's id). No `bucket` nor `shard`: relays stay out of the
 * landmark groups, whose sizes are then exact shares of the ordinary nodes.
 */
export function relayNode(relays: number, index: number): NodeInput {
  const tree = benchRelays(relays);
  const relay = tree[index] as RelayInput;
  const servedIndex = LOCATIONS.findIndex(
    (_, locationIndex) => policyServerOf(locationIndex, relays) === relay.id,
  );
  const location = LOCATIONS[Math.max(0, servedIndex)] as (typeof LOCATIONS)[number];
  return {
    id: relay.id,
    hostname: `${relay.id}.${DOMAIN}`,
    policyServer: relay.policyServer ?? 'root',
    state: 'enabled',
    facts: {
      os: { name: 'Debian', version: '12' },
      location: location.id,
      role: 'relay',
      env: 'prod',
      arch: 'x86_64',
      cpus: 16,
    },
    properties: { contact: 'relay-oncall@example.com' },
  };
}
