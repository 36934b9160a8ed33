import type { DirectiveInput, GroupInput, RelationshipInput, RuleInput } from '../fleet-file';
import type { Json } from '@policygen/engine';

/** Global parameters: the least specific level of every node's properties. */
export const DEMO_PARAMETERS: Record<string, Json> = {
  dns_server: '10.0.0.53',
  ntp_server: 'pool.ntp.org',
  admin_email: 'ops@example.com',
};

function variable(
  id: string,
  name: string,
  variableName: string,
  value: string,
  priority = 5,
): DirectiveInput {
  return {
    id,
    name,
    technique: 'generic_variable_definition',
    techniqueVersion: '1.0',
    priority,
    parameters: { variable_name: variableName, variable_value: value },
  };
}

function pkg(id: string, packageName: string, extra: Partial<DirectiveInput> = {}): DirectiveInput {
  return {
    id,
    name: `Package ${packageName}`,
    technique: 'package_state',
    parameters: { package_name: packageName },
    ...extra,
  };
}

function service(id: string, serviceName: string, extra: Partial<DirectiveInput> = {}): DirectiveInput {
  return {
    id,
    name: `Service ${serviceName}`,
    technique: 'service_state',
    parameters: { service_name: serviceName },
    ...extra,
  };
}

function sysctl(id: string, key: string, value: string): DirectiveInput {
  return { id, name: `sysctl ${key}`, technique: 'sysctl_value', parameters: { key, value } };
}

function user(id: string, login: string, uid: string, description: string): DirectiveInput {
  return {
    id,
    name: `User ${login}`,
    technique: 'user_account',
    parameters: { login, uid: uid, description },
  };
}

const DATACENTER_DNS = '${node.properties[datacenter][dns] | default = "10.0.0.1"}';

/**
 * The directives. Every relationship metaparameter names a directive of the same rule (so it is
 * applied wherever the naming directive is); the relationships between the SSH directives, one of
 * which overrides the other on web servers, are fleet-wide `relationships` instead, which bind only
 * where both ends are applied.
 */
export const DEMO_DIRECTIVES: DirectiveInput[] = [
  // 05. Base
  variable('dns-default', 'DNS default', 'DNS', '${rudder.param.dns_server}', 0),
  variable('admin-email', 'Administrator e-mail', 'ADMIN_EMAIL', '${rudder.param.admin_email}'),
  variable('node-fqdn', 'Node FQDN', 'NODE_FQDN', '${rudder.node.hostname}'),
  variable('ntp-fallback', 'NTP fallback server', 'NTP_FALLBACK', '${rudder.param.ntp_server}'),
  pkg('pkg-openssh', 'openssh-server'),
  pkg('pkg-chrony', 'chrony'),
  pkg('pkg-telnet-absent', 'telnet', {
    name: 'Package telnet absent',
    enabled: false,
    parameters: { package_name: 'telnet', state: 'absent' },
  }),
  service('svc-sshd', 'sshd', { require: ['pkg-openssh'] }),
  service('svc-chronyd', 'chronyd', { require: ['pkg-chrony'] }),
  {
    id: 'ntp-servers',
    name: 'NTP servers of the datacenter',
    technique: 'ntp_configuration',
    parameters: {
      servers: '${node.properties[ntp][servers]}',
      timezone: '${node.properties[datacenter][timezone] | default = "UTC"}',
    },
    require: ['pkg-chrony'],
    notify: ['svc-chronyd'],
  },
  {
    id: 'sshd-baseline',
    name: 'SSH baseline',
    technique: 'sshd_configuration',
    techniqueVersion: '2.1',
    priority: 5,
    parameters: { port: '22', permit_root_login: 'prohibit-password', password_authentication: 'no' },
  },
  {
    id: 'resolv-conf',
    name: 'Resolver configuration',
    technique: 'dns_resolver',
    parameters: { nameserver: DATACENTER_DNS, search: 'example.com' },
  },
  {
    id: 'motd-default',
    name: 'Message of the day',
    technique: 'motd',
    parameters: {
      message:
        '${rudder.node.hostname} is managed by policygen (${node.properties[datacenter][name] | default = "no datacenter"}). Contact ${rudder.param.admin_email}.',
    },
  },
  sysctl('sysctl-swappiness', 'vm.swappiness', '10'),
  user('user-ops', 'ops', '1500', 'Operations team'),
  {
    id: 'file-ssh-banner',
    name: 'SSH banner',
    technique: 'file_content',
    parameters: {
      path: '/etc/issue.net',
      content:
        'Authorized access only - ${node.properties[datacenter][name] | default = "unknown"} datacenter',
    },
  },
  {
    id: 'cron-tmp-cleanup',
    name: 'Clean /tmp',
    technique: 'cron_job',
    parameters: {
      name: 'policygen-tmp-cleanup',
      schedule: '17 3 * * *',
      command: '/usr/bin/find /tmp -xdev -type f -mtime +7 -delete',
    },
  },

  // 10. Monitoring
  pkg('pkg-node-exporter', 'prometheus-node-exporter'),
  service('svc-node-exporter', 'node_exporter', { require: ['pkg-node-exporter'] }),

  // 15. Debian 12 and later, 16. RHEL
  pkg('pkg-nftables', 'nftables'),
  pkg('pkg-selinux-tools', 'policycoreutils-python-utils'),

  // 20. Web servers
  pkg('pkg-nginx', 'nginx'),
  sysctl('sysctl-somaxconn', 'net.core.somaxconn', '${node.properties[web][somaxconn] | default = "1024"}'),
  service('svc-nginx', 'nginx', { require: ['pkg-nginx'], subscribe: ['sysctl-somaxconn'] }),
  user('user-deploy', 'deploy', '1600', 'Application deployment'),
  {
    id: 'sshd-web-hardened',
    name: 'SSH hardened for web servers',
    technique: 'sshd_configuration',
    techniqueVersion: '2.1',
    priority: 2,
    parameters: { port: '2222', permit_root_login: 'no', password_authentication: 'no' },
  },

  // 25. US compliance
  {
    id: 'cron-audit-us',
    name: 'Hourly audit mark',
    technique: 'cron_job',
    parameters: {
      name: 'policygen-audit',
      schedule: '0 * * * *',
      command: '/usr/bin/logger -t policygen audit ${rudder.node.id}',
    },
  },

  // 30. Databases
  pkg('pkg-postgresql', 'postgresql'),
  service('svc-postgresql', 'postgresql', { require: ['pkg-postgresql'] }),
  user('user-dba', 'dba', '1700', 'Database administrators'),
  {
    id: 'dir-backup',
    name: 'Backup directory',
    technique: 'directory_present',
    parameters: { path: '/var/backups/postgresql' },
    before: ['cron-db-backup'],
  },
  {
    id: 'cron-db-backup',
    name: 'Nightly database backup',
    technique: 'cron_job',
    parameters: {
      name: 'policygen-db-backup',
      schedule: '30 1 * * *',
      command: '/usr/bin/pg_dumpall > /var/backups/postgresql/all.sql',
      user: 'postgres',
    },
    require: ['user-dba'],
  },

  // 35. Cache servers
  pkg('pkg-redis', 'redis-server'),
  service('svc-redis', 'redis', { require: ['pkg-redis'] }),
  sysctl('sysctl-overcommit', 'vm.overcommit_memory', '1'),

  // 40. Applications
  {
    id: 'dir-app',
    name: 'Application directory',
    technique: 'directory_present',
    parameters: { path: '/opt/app' },
  },
  {
    id: 'file-app-config',
    name: 'Application environment',
    technique: 'file_content',
    parameters: {
      path: '/opt/app/app.env',
      content:
        'DATACENTER=${node.properties[datacenter][name]} PORT=${node.properties[app][port] | default = "8080"}',
    },
    require: ['dir-app'],
  },

  // 50. Paris datacenter, 55. Paris web front: the DNS override of seeds 000/001
  variable('dns-paris', 'DNS Paris', 'DNS', DATACENTER_DNS, 10),
  variable('cdn-origin-paris', 'CDN origin Paris', 'CDN_ORIGIN', 'origin-paris.example.com'),

  // 60. Relayed nodes, 61. Relay EU mirror
  variable('policy-relay', 'Policy relay', 'POLICY_RELAY', '${rudder.node.policyserver.id}'),
  variable('apt-mirror-eu', 'APT mirror EU', 'APT_MIRROR', 'http://relay-eu.example.com/debian'),

  // 80. Lab
  sysctl('sysctl-ip-forward', 'net.ipv4.ip_forward', '1'),
  {
    id: 'motd-lab',
    name: 'Message of the day (lab)',
    technique: 'motd',
    priority: 3,
    parameters: {
      message: 'LAB MACHINE ${rudder.node.hostname}: wiped every night. Contact ${rudder.param.admin_email}.',
    },
  },

  // 90. Legacy (disabled rule)
  pkg('pkg-inetutils-absent', 'inetutils-inetd', {
    name: 'Package inetutils-inetd absent',
    parameters: { package_name: 'inetutils-inetd', state: 'absent' },
  }),
];

/** Fleet-wide relationships: they order both ends wherever both are applied. */
export const DEMO_RELATIONSHIPS: RelationshipInput[] = [
  { from: 'resolv-conf', to: 'pkg-openssh', kind: '->' },
  { from: 'pkg-openssh', to: 'sshd-baseline', kind: '->' },
  { from: 'pkg-openssh', to: 'sshd-web-hardened', kind: '->' },
  { from: 'sshd-baseline', to: 'svc-sshd', kind: '~>' },
  { from: 'sshd-web-hardened', to: 'svc-sshd', kind: '~>' },
];

export const DEMO_RULES: RuleInput[] = [
  {
    id: 'r-base',
    name: '05. Base',
    directives: [
      'dns-default',
      'admin-email',
      'node-fqdn',
      'ntp-fallback',
      'pkg-openssh',
      'pkg-chrony',
      'pkg-telnet-absent',
      'svc-sshd',
      'svc-chronyd',
      'ntp-servers',
      'sshd-baseline',
      'resolv-conf',
      'motd-default',
      'sysctl-swappiness',
      'user-ops',
      'file-ssh-banner',
      'cron-tmp-cleanup',
    ],
    targets: { include: ['special:all'] },
  },
  {
    id: 'r-monitoring',
    name: '10. Monitoring',
    directives: ['pkg-node-exporter', 'svc-node-exporter'],
    targets: ['special:all_exceptPolicyServers'],
  },
  {
    id: 'r-debian12',
    name: '15. Debian 12 and later',
    directives: ['pkg-nftables'],
    targets: ['group:g-debian-12plus'],
  },
  { id: 'r-rhel', name: '16. RHEL', directives: ['pkg-selinux-tools'], targets: ['group:g-rhel'] },
  {
    id: 'r-web',
    name: '20. Web servers',
    directives: ['pkg-nginx', 'sysctl-somaxconn', 'svc-nginx', 'user-deploy', 'sshd-web-hardened'],
    targets: ['group:g-web'],
  },
  {
    id: 'r-us',
    name: '25. US compliance',
    directives: ['cron-audit-us'],
    targets: { and: ['group:g-nyc', 'special:all_exceptPolicyServers'] },
  },
  {
    id: 'r-db',
    name: '30. Databases',
    directives: ['pkg-postgresql', 'svc-postgresql', 'user-dba', 'dir-backup', 'cron-db-backup'],
    targets: ['group:g-db'],
  },
  {
    id: 'r-cache',
    name: '35. Cache servers',
    directives: ['pkg-redis', 'svc-redis', 'sysctl-overcommit'],
    targets: ['group:g-cache'],
  },
  {
    id: 'r-app',
    name: '40. Applications',
    directives: ['dir-app', 'file-app-config', 'user-deploy'],
    targets: { include: ['group:g-app'], exclude: ['group:g-lab'] },
  },
  { id: 'r-paris', name: '50. Paris datacenter', directives: ['dns-paris'], targets: ['group:g-paris'] },
  {
    id: 'r-paris-web',
    name: '55. Paris web front',
    directives: ['cdn-origin-paris'],
    targets: ['group:g-paris-web'],
  },
  {
    id: 'r-relayed',
    name: '60. Relayed nodes',
    directives: ['policy-relay'],
    targets: { or: ['policyServer:relay-eu', 'policyServer:relay-us'] },
  },
  {
    id: 'r-relay-eu',
    name: '61. Relay EU mirror',
    directives: ['apt-mirror-eu'],
    targets: ['policyServer:relay-eu'],
  },
  { id: 'r-lab', name: '80. Lab', directives: ['sysctl-ip-forward', 'motd-lab'], targets: ['group:g-lab'] },
  {
    id: 'r-legacy',
    name: '90. Legacy inetd removal',
    enabled: false,
    directives: ['pkg-inetutils-absent'],
    targets: ['special:all'],
  },
];

export interface Location {
  readonly id: 'paris' | 'lyon' | 'berlin' | 'nyc';
  readonly code: string;
  readonly name: string;
  readonly nodes: number;
  readonly policyServer: string;
  readonly dns: string;
  readonly timezone: string;
  readonly ntp: readonly string[];
}

/** Where the nodes are: 298 of them, plus the two relays' own nodes. */
export const LOCATIONS: readonly Location[] = [
  {
    id: 'paris',
    code: 'par',
    name: 'Paris',
    nodes: 110,
    policyServer: 'relay-eu',
    dns: '10.75.0.53',
    timezone: 'Europe/Paris',
    ntp: ['0.fr.pool.ntp.org', '1.fr.pool.ntp.org'],
  },
  {
    id: 'lyon',
    code: 'lyo',
    name: 'Lyon',
    nodes: 64,
    policyServer: 'root',
    dns: '10.69.0.53',
    timezone: 'Europe/Paris',
    ntp: ['2.fr.pool.ntp.org', '3.fr.pool.ntp.org'],
  },
  {
    id: 'berlin',
    code: 'ber',
    name: 'Berlin',
    nodes: 60,
    policyServer: 'relay-eu',
    dns: '10.30.0.53',
    timezone: 'Europe/Berlin',
    ntp: ['0.de.pool.ntp.org', '1.de.pool.ntp.org'],
  },
  {
    id: 'nyc',
    code: 'nyc',
    name: 'New York',
    nodes: 64,
    policyServer: 'relay-us',
    dns: '10.212.0.53',
    timezone: 'America/New_York',
    ntp: ['0.us.pool.ntp.org', '1.us.pool.ntp.org'],
  },
];

/**
 * Groups. Properties are set so that no node gets the same property from two unrelated groups:
 * `datacenter` and `ntp` come from the location groups (and `g-paris-web` refines its parent
 * `g-paris`), `region` from the continent groups, the others from one role group each.
 */
export function demoGroups(labNodes: readonly string[], relayNodes: readonly string[]): GroupInput[] {
  const locationGroups: GroupInput[] = LOCATIONS.map((location) => ({
    id: `g-${location.id}`,
    name: `Datacenter ${location.name}`,
    criteria: { all: [{ fact: 'location', op: 'eq', value: location.id }] },
    properties: {
      datacenter: { name: location.name, dns: location.dns, timezone: location.timezone },
      ntp: { servers: [...location.ntp] },
    },
  }));
  return [
    { id: 'g-debian', name: 'Debian', criteria: { all: [{ fact: 'os.name', op: 'eq', value: 'Debian' }] } },
    {
      id: 'g-ubuntu',
      name: 'Ubuntu',
      criteria: { all: [{ fact: 'os.name', op: 'regex', value: '^Ubuntu$' }] },
    },
    {
      id: 'g-rhel',
      name: 'Red Hat Enterprise Linux',
      criteria: { any: [{ fact: 'os.name', op: 'in', value: ['RHEL'] }] },
    },
    {
      id: 'g-debian-family',
      name: 'Debian family',
      criteria: {
        any: [
          { fact: 'os.name', op: 'eq', value: 'Debian' },
          { fact: 'os.name', op: 'eq', value: 'Ubuntu' },
        ],
      },
    },
    {
      id: 'g-debian-12plus',
      name: 'Debian 12 and later',
      criteria: {
        all: [
          { fact: 'os.name', op: 'eq', value: 'Debian' },
          { fact: 'os.version', op: 'ge', value: '12' },
        ],
      },
    },
    ...locationGroups,
    {
      id: 'g-paris-web',
      name: 'Paris web front',
      criteria: { all: [{ group: 'g-paris' }, { fact: 'role', op: 'eq', value: 'web' }] },
      // Overrides its parent's resolver for the DMZ; the datacenter's name is inherited.
      properties: { datacenter: { dns: '10.75.1.53' } },
    },
    {
      id: 'g-europe',
      name: 'Europe',
      criteria: { all: [{ fact: 'location', op: 'in', value: ['paris', 'lyon', 'berlin'] }] },
      properties: { region: { name: 'eu', compliance: 'GDPR' } },
    },
    {
      id: 'g-america',
      name: 'America',
      criteria: { all: [{ fact: 'location', op: 'in', value: ['nyc'] }] },
      properties: { region: { name: 'us', compliance: 'SOX' } },
    },
    {
      id: 'g-web',
      name: 'Web servers',
      criteria: { all: [{ fact: 'role', op: 'eq', value: 'web' }] },
      properties: { web: { port: 443, somaxconn: 2048 } },
    },
    {
      id: 'g-db',
      name: 'Database servers',
      criteria: { all: [{ fact: 'role', op: 'eq', value: 'db' }] },
      properties: { backup: { target: 'backup.example.com:/srv/backups', retention_days: 14 } },
    },
    {
      id: 'g-cache',
      name: 'Cache servers',
      criteria: { all: [{ fact: 'role', op: 'eq', value: 'cache' }] },
      properties: { redis: { maxmemory: '2gb' } },
    },
    {
      id: 'g-app',
      name: 'Application servers',
      criteria: { all: [{ fact: 'role', op: 'eq', value: 'app' }] },
      properties: { app: { port: 8080 } },
    },
    { id: 'g-with-role', name: 'Nodes with a role', criteria: { all: [{ fact: 'role', op: 'exists' }] } },
    {
      id: 'g-owned',
      name: 'Nodes with an owner',
      criteria: { all: [{ property: 'owner', op: 'exists' }] },
    },
    { id: 'g-relays', name: 'Relays', nodes: [...relayNodes] },
    {
      id: 'g-lab',
      name: 'Lab',
      nodes: [...labNodes],
      properties: { lab: { wiped: 'nightly' } },
    },
  ];
}
