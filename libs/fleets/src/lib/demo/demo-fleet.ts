import type { Json } from '@policygen/engine';
import type { FleetFile, NodeInput } from '../fleet-file';
import { mulberry32, sample, weighted } from '../random';
import type { Random } from '../random';
import {
  DEMO_DIRECTIVES,
  DEMO_PARAMETERS,
  DEMO_RELATIONSHIPS,
  DEMO_RULES,
  LOCATIONS,
  demoGroups,
} from './configuration';
import { DEMO_TECHNIQUES } from './techniques';

const DEMO_SEED = 20_240_611;
const DOMAIN = 'example.com';

export const DEMO_RELAYS = ['relay-eu', 'relay-us'] as const;

const ROLES = [
  ['web', 4],
  ['app', 2.5],
  ['db', 1.5],
  ['cache', 2],
] as const;

const OPERATING_SYSTEMS: readonly (readonly [{ name: string; version: string }, number])[] = [
  [{ name: 'Debian', version: '12' }, 3.5],
  [{ name: 'Debian', version: '11' }, 1],
  [{ name: 'Ubuntu', version: '22.04' }, 1.5],
  [{ name: 'Ubuntu', version: '24.04' }, 1.5],
  [{ name: 'RHEL', version: '8.10' }, 1],
  [{ name: 'RHEL', version: '9.4' }, 1.5],
] as const;

const OWNERS = ['team-storefront', 'team-payments', 'team-search', 'team-data'] as const;

/**
 * The demo fleet, as a fleet file (fleet-format.md): 300 nodes in four datacenters under root and
 * two relays, grouped by OS, location and role, with a dozen techniques and fifteen rules. Built
 * from a constant seed: every call returns the same value.
 */
export function buildDemoFleet(): unknown {
  return buildDemoFleetFile();
}

export function buildDemoFleetFile(): FleetFile {
  const random = mulberry32(DEMO_SEED);
  const nodes = [...relayNodes(), ...LOCATIONS.flatMap((location) => locationNodes(random, location))];

  const lyon = nodes.filter((node) => node.facts?.['location'] === 'lyon').map((node) => node.id);
  const labNodes = sample(random, lyon, 6);
  const berlin = nodes.filter((node) => node.facts?.['location'] === 'berlin');
  for (const node of sample(random, berlin, 2)) node.state = 'ignored';
  const nyc = nodes.filter((node) => node.facts?.['location'] === 'nyc' && node.id !== 'relay-us');
  for (const node of sample(random, nyc, 1)) node.state = 'empty-policies';

  return {
    settings: { ordering: 'alphanumeric', orderingSeed: 0 },
    parameters: structuredClone(DEMO_PARAMETERS),
    techniques: structuredClone(DEMO_TECHNIQUES),
    directives: structuredClone(DEMO_DIRECTIVES),
    relationships: structuredClone(DEMO_RELATIONSHIPS),
    rules: structuredClone(DEMO_RULES),
    groups: demoGroups(labNodes, [...DEMO_RELAYS]),
    nodes,
    relays: DEMO_RELAYS.map((id) => ({ id, policyServer: 'root' })),
  };
}

/** The relays' own nodes: a node whose id is a relay's id is that relay. */
function relayNodes(): NodeInput[] {
  return [
    { id: 'relay-eu', location: 'paris' },
    { id: 'relay-us', location: 'nyc' },
  ].map(({ id, location }) => ({
    id,
    hostname: `${id}.${DOMAIN}`,
    policyServer: 'root',
    state: 'enabled',
    facts: { os: { name: 'Debian', version: '12' }, location, arch: 'x86_64' },
    properties: {},
  }));
}

function locationNodes(random: Random, location: (typeof LOCATIONS)[number]): NodeInput[] {
  const counters = new Map<string, number>();
  const nodes: NodeInput[] = [];
  for (let index = 0; index < location.nodes; index++) {
    const role = weighted(random, ROLES);
    const os = weighted(random, OPERATING_SYSTEMS);
    const sequence = (counters.get(role) ?? 0) + 1;
    counters.set(role, sequence);
    const id = `${role}-${location.code}-${String(sequence).padStart(3, '0')}`;
    const properties: Record<string, Json> = {};
    if (random() < 0.3)
      properties['owner'] = weighted(
        random,
        OWNERS.map((owner) => [owner, 1] as const),
      );
    nodes.push({
      id,
      hostname: `${id}.${DOMAIN}`,
      policyServer: location.policyServer,
      state: 'enabled',
      facts: { os: { name: os.name, version: os.version }, location: location.id, role, arch: 'x86_64' },
      properties,
    });
  }
  // A few hand-made variations on node-level properties (the most specific level).
  const first = (role: string): NodeInput | undefined => nodes.find((node) => node.facts?.['role'] === role);
  const web = first('web');
  if (web && location.id === 'paris') web.properties = { ...web.properties, web: { somaxconn: 4096 } };
  const db = first('db');
  if (db && location.id === 'berlin')
    db.properties = { ...db.properties, ntp: { servers: ['ntp1.berlin.example.com'] } };
  const app = first('app');
  if (app && location.id === 'lyon') app.properties = { ...app.properties, policygen_ordering: 'title-hash' };
  return nodes;
}
