import type { Json } from '@policygen/engine';

/**
 * The vocabulary of the benchmark fleet: what node facts and properties take their values from.
 * Weights are skewed on purpose (a few big datacenters and roles, a long tail of small ones), so
 * that groups built on them have very different sizes.
 */

export interface BenchLocation {
  readonly id: string;
  readonly name: string;
  readonly region: 'eu' | 'us' | 'apac';
  readonly weight: number;
  readonly dns: string;
  readonly timezone: string;
}

const LOCATION_ROWS: readonly (readonly [string, string, BenchLocation['region'], string])[] = [
  ['par1', 'Paris 1', 'eu', 'Europe/Paris'],
  ['par2', 'Paris 2', 'eu', 'Europe/Paris'],
  ['lyo1', 'Lyon', 'eu', 'Europe/Paris'],
  ['ber1', 'Berlin', 'eu', 'Europe/Berlin'],
  ['fra1', 'Frankfurt', 'eu', 'Europe/Berlin'],
  ['ams1', 'Amsterdam', 'eu', 'Europe/Amsterdam'],
  ['lon1', 'London', 'eu', 'Europe/London'],
  ['dub1', 'Dublin', 'eu', 'Europe/Dublin'],
  ['mad1', 'Madrid', 'eu', 'Europe/Madrid'],
  ['mil1', 'Milan', 'eu', 'Europe/Rome'],
  ['nyc1', 'New York', 'us', 'America/New_York'],
  ['was1', 'Washington', 'us', 'America/New_York'],
  ['chi1', 'Chicago', 'us', 'America/Chicago'],
  ['dal1', 'Dallas', 'us', 'America/Chicago'],
  ['sfo1', 'San Francisco', 'us', 'America/Los_Angeles'],
  ['sea1', 'Seattle', 'us', 'America/Los_Angeles'],
  ['tor1', 'Toronto', 'us', 'America/Toronto'],
  ['sin1', 'Singapore', 'apac', 'Asia/Singapore'],
  ['tok1', 'Tokyo', 'apac', 'Asia/Tokyo'],
  ['syd1', 'Sydney', 'apac', 'Australia/Sydney'],
];

export const LOCATIONS: readonly BenchLocation[] = LOCATION_ROWS.map(
  ([id, name, region, timezone], index) => ({
    id,
    name,
    region,
    // Zipf-like: the first datacenters hold most of the fleet.
    weight: 1 / (index + 1) ** 0.8,
    dns: `10.${index + 10}.0.53`,
    timezone,
  }),
);

export interface BenchRole {
  readonly id: string;
  readonly tier: 'front' | 'back' | 'data' | 'infra';
  readonly weight: number;
}

const ROLE_ROWS: readonly (readonly [string, BenchRole['tier']])[] = [
  ['web', 'front'],
  ['app', 'back'],
  ['api', 'back'],
  ['worker', 'back'],
  ['db', 'data'],
  ['cache', 'data'],
  ['queue', 'data'],
  ['search', 'data'],
  ['lb', 'front'],
  ['proxy', 'front'],
  ['cdn', 'front'],
  ['batch', 'back'],
  ['etl', 'data'],
  ['analytics', 'data'],
  ['ml', 'back'],
  ['storage', 'data'],
  ['backup', 'infra'],
  ['monitoring', 'infra'],
  ['logging', 'infra'],
  ['metrics', 'infra'],
  ['dns', 'infra'],
  ['ntp', 'infra'],
  ['mail', 'back'],
  ['ldap', 'infra'],
  ['vpn', 'infra'],
  ['bastion', 'infra'],
  ['ci', 'infra'],
  ['registry', 'infra'],
  ['vault', 'infra'],
  ['build', 'infra'],
];

export const ROLES: readonly BenchRole[] = ROLE_ROWS.map(([id, tier], index) => ({
  id,
  tier,
  weight: 1 / (index + 1) ** 0.9,
}));

export const ENVIRONMENTS: readonly (readonly [string, number])[] = [
  ['prod', 60],
  ['staging', 25],
  ['dev', 15],
];

export interface BenchOs {
  readonly name: string;
  readonly version: string;
  readonly family: 'debian' | 'redhat' | 'suse';
}

export const OPERATING_SYSTEMS: readonly (readonly [BenchOs, number])[] = [
  [{ name: 'Debian', version: '12', family: 'debian' }, 30],
  [{ name: 'Debian', version: '11', family: 'debian' }, 10],
  [{ name: 'Ubuntu', version: '22.04', family: 'debian' }, 15],
  [{ name: 'Ubuntu', version: '24.04', family: 'debian' }, 12],
  [{ name: 'RHEL', version: '8.10', family: 'redhat' }, 8],
  [{ name: 'RHEL', version: '9.4', family: 'redhat' }, 12],
  [{ name: 'Rocky', version: '9.3', family: 'redhat' }, 8],
  [{ name: 'SLES', version: '15.5', family: 'suse' }, 5],
];

export const OS_NAMES: readonly string[] = [...new Set(OPERATING_SYSTEMS.map(([os]) => os.name))];

export const ARCHITECTURES: readonly (readonly [string, number])[] = [
  ['x86_64', 88],
  ['aarch64', 12],
];

export const OWNERS: readonly string[] = [
  'team-storefront',
  'team-payments',
  'team-search',
  'team-data',
  'team-platform',
  'team-identity',
  'team-mobile',
  'team-ml',
];

/** Global parameters; directives name some of them through `${rudder.param.NAME}`. */
export const BENCH_PARAMETERS: Readonly<Record<string, Json>> = {
  dns_server: '10.0.0.53',
  ntp_server: 'pool.ntp.org',
  admin_email: 'ops@example.com',
  proxy_url: 'http://proxy.example.com:3128',
  repository_url: 'https://repo.example.com/bench',
  syslog_server: 'syslog.example.com',
  backup_target: 'backup.example.com:/srv/backups',
  support_phone: '+1-555-0100',
};

/** The parameter the landmarks name: every directive that refers to a parameter may use it. */
export const LANDMARK_PARAMETER = 'dns_server';

/**
 * References to node properties as directives write them. Every one has a default: a node that
 * lacks the property (or whose groups do not set it) still generates.
 */
export const PROPERTY_REFERENCES: readonly string[] = [
  '${node.properties[datacenter][dns] | default = "10.0.0.53"}',
  '${node.properties[datacenter][timezone] | default = "UTC"}',
  '${node.properties[environment][name] | default = "unknown"}',
  '${node.properties[role_profile][tier] | default = "none"}',
  '${node.properties[contact] | default = "ops@example.com"}',
  '${node.properties[owner] | default = "nobody"}',
  '${node.properties[app][port] | default = "8080"}',
  '${node.properties[shard_cfg][slot] | default = "0"}',
  '${node.properties[os_profile][packager] | default = "none"}',
];

/** The node property of the "one node's property changes" landmark: referenced, never a criterion. */
export const LANDMARK_PROPERTY = 'contact';
export const CONTACT_REFERENCE = '${node.properties[contact] | default = "ops@example.com"}';

export const DOMAIN = 'bench.example.com';
