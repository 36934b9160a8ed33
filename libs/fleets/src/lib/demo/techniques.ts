import type { TechniqueInput } from '../fleet-file';

/**
 * The demo's techniques. Every promise is plain CFEngine 3 that `cf-promises` accepts without the
 * masterfiles standard library: string, slist and number attributes, and calls of built-in
 * functions only (no body or bundle that the generated tree would not define).
 */
export const DEMO_TECHNIQUES: TechniqueInput[] = [
  {
    id: 'generic_variable_definition',
    version: '1.0',
    name: 'Generic Variable Definition',
    multiInstance: true,
    policyGeneration: 'merged',
    parameters: [
      { name: 'variable_name', required: true },
      { name: 'variable_value', required: true },
    ],
    promises: [{ type: 'vars', promiser: '{{variable_name}}', attributes: { string: '{{variable_value}}' } }],
  },
  {
    id: 'package_state',
    version: '1.0',
    name: 'Package state',
    multiInstance: true,
    policyGeneration: 'merged',
    parameters: [
      { name: 'package_name', required: true },
      { name: 'state', default: 'present' },
    ],
    promises: [
      { type: 'vars', promiser: 'package_state[{{package_name}}]', attributes: { string: '{{state}}' } },
      {
        type: 'reports',
        promiser: 'Package {{package_name}} must be {{state}}',
        attributes: { if: 'policygen_verbose' },
      },
    ],
  },
  {
    id: 'file_content',
    version: '1.0',
    name: 'File content',
    multiInstance: true,
    policyGeneration: 'separated-with-parameters',
    parameters: [
      { name: 'path', required: true },
      { name: 'content', required: true },
    ],
    promises: [
      {
        type: 'files',
        promiser: '{{path}}',
        attributes: { create: 'true', content: { call: 'concat', args: ['{{content}}', '$(const.n)'] } },
      },
      { type: 'reports', promiser: 'Content of {{path}} enforced', attributes: { if: 'policygen_verbose' } },
    ],
  },
  {
    id: 'sshd_configuration',
    version: '2.1',
    name: 'SSH server configuration',
    multiInstance: false,
    parameters: [
      { name: 'port', default: '22' },
      { name: 'permit_root_login', default: 'no' },
      { name: 'password_authentication', default: 'no' },
    ],
    promises: [
      { type: 'vars', promiser: 'sshd_port', attributes: { string: '{{port}}' } },
      {
        type: 'classes',
        promiser: 'policygen_sshd_dropin_dir',
        attributes: { expression: { call: 'isdir', args: ['/etc/ssh/sshd_config.d'] } },
      },
      {
        type: 'files',
        promiser: '/etc/ssh/sshd_config.d/50-policygen.conf',
        attributes: {
          create: 'true',
          if: 'policygen_sshd_dropin_dir',
          content: {
            call: 'concat',
            args: [
              'Port {{port}}',
              '$(const.n)',
              'PermitRootLogin {{permit_root_login}}',
              '$(const.n)',
              'PasswordAuthentication {{password_authentication}}',
              '$(const.n)',
            ],
          },
        },
      },
    ],
    refresh: [{ type: 'commands', promiser: '/bin/true', attributes: { if: 'linux' } }],
  },
  {
    id: 'ntp_configuration',
    version: '1.0',
    name: 'Time synchronisation (NTP)',
    multiInstance: true,
    policyGeneration: 'merged',
    parameters: [
      { name: 'servers', required: true },
      { name: 'timezone', default: 'UTC' },
    ],
    promises: [
      {
        type: 'vars',
        promiser: 'ntp_servers',
        attributes: { data: { call: 'parsejson', args: ['{{servers}}'] } },
      },
      {
        type: 'vars',
        promiser: 'ntp_server_list',
        attributes: { slist: { call: 'getvalues', args: ['ntp_servers'] } },
      },
      {
        type: 'vars',
        promiser: 'ntp_source_lines',
        attributes: { slist: { call: 'maplist', args: ['server $(this) iburst', 'ntp_server_list'] } },
      },
      { type: 'vars', promiser: 'ntp_timezone', attributes: { string: '{{timezone}}' } },
      {
        type: 'files',
        promiser: '/etc/chrony/sources.d/policygen.sources',
        attributes: { create: 'true', content: { call: 'join', args: ['$(const.n)', 'ntp_source_lines'] } },
      },
    ],
  },
  {
    id: 'motd',
    version: '1.0',
    name: 'Message of the day',
    multiInstance: false,
    parameters: [{ name: 'message', required: true }],
    promises: [
      {
        type: 'files',
        promiser: '/etc/motd',
        attributes: { create: 'true', content: { call: 'concat', args: ['{{message}}', '$(const.n)'] } },
      },
    ],
  },
  {
    id: 'user_account',
    version: '1.0',
    name: 'User account',
    multiInstance: true,
    policyGeneration: 'separated',
    parameters: [
      { name: 'login', required: true },
      { name: 'uid', required: true },
      { name: 'shell', default: '/bin/bash' },
      { name: 'description', default: '' },
    ],
    promises: [
      {
        type: 'users',
        promiser: '{{login}}',
        attributes: { policy: 'present', uid: '{{uid}}', shell: '{{shell}}', description: '{{description}}' },
      },
    ],
  },
  {
    id: 'sysctl_value',
    version: '1.0',
    name: 'Kernel parameter (sysctl)',
    multiInstance: true,
    policyGeneration: 'merged',
    parameters: [
      { name: 'key', required: true },
      { name: 'value', required: true },
    ],
    promises: [
      {
        type: 'files',
        promiser: '/etc/sysctl.d/60-policygen-{{key}}.conf',
        attributes: {
          create: 'true',
          content: { call: 'concat', args: ['{{key}} = {{value}}', '$(const.n)'] },
        },
      },
      { type: 'reports', promiser: 'sysctl {{key}} = {{value}}', attributes: { if: 'policygen_verbose' } },
    ],
  },
  {
    id: 'cron_job',
    version: '1.0',
    name: 'Cron job',
    multiInstance: true,
    policyGeneration: 'separated-with-parameters',
    parameters: [
      { name: 'name', required: true },
      { name: 'schedule', required: true },
      { name: 'command', required: true },
      { name: 'user', default: 'root' },
    ],
    promises: [
      {
        type: 'files',
        promiser: '/etc/cron.d/{{name}}',
        attributes: {
          create: 'true',
          content: { call: 'concat', args: ['{{schedule}} {{user}} {{command}}', '$(const.n)'] },
        },
      },
    ],
  },
  {
    id: 'service_state',
    version: '1.0',
    name: 'Service state',
    multiInstance: true,
    policyGeneration: 'merged',
    parameters: [
      { name: 'service_name', required: true },
      { name: 'state', default: 'running' },
    ],
    promises: [
      {
        type: 'processes',
        promiser: '{{service_name}}',
        attributes: { restart_class: 'policygen_restart_{{service_name}}' },
      },
      { type: 'commands', promiser: '/bin/true', attributes: { if: 'policygen_restart_{{service_name}}' } },
      {
        type: 'reports',
        promiser: 'Service {{service_name}} must be {{state}}',
        attributes: { if: 'policygen_verbose' },
      },
    ],
    refresh: [{ type: 'commands', promiser: '/bin/true', attributes: { if: 'linux' } }],
  },
  {
    id: 'directory_present',
    version: '1.0',
    name: 'Directory',
    multiInstance: true,
    policyGeneration: 'merged',
    parameters: [{ name: 'path', required: true }],
    promises: [{ type: 'files', promiser: '{{path}}/.', attributes: { create: 'true' } }],
  },
  {
    id: 'dns_resolver',
    version: '1.0',
    name: 'DNS resolver',
    multiInstance: false,
    parameters: [
      { name: 'nameserver', required: true },
      { name: 'search', default: 'example.com' },
    ],
    promises: [
      {
        type: 'classes',
        promiser: 'policygen_resolv_conf_managed',
        attributes: { expression: { call: 'fileexists', args: ['/etc/resolv.conf'] } },
      },
      {
        type: 'files',
        promiser: '/etc/resolv.conf',
        attributes: {
          create: 'true',
          content: {
            call: 'concat',
            args: ['search {{search}}', '$(const.n)', 'nameserver {{nameserver}}', '$(const.n)'],
          },
        },
      },
    ],
  },
];
