/**
 * docker-compose.yml and the Dockerfiles it builds agree with each other and with the sources: no
 * Docker engine needed (nothing is built or started here), only the files read and cross-checked.
 * The Policygen services are the compose services with a `build`; the app each one runs is the
 * `dist/<app>/main.js` its image's CMD names.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { parse } from 'yaml';

const root = join(__dirname, '..', '..');
const COMPOSE_FILE = 'docker-compose.yml';
const BUNDLER = 'tools/build/bundle-cli.mjs';
const NODE_IMAGE = 'node:20-bookworm-slim';
const APPS = [
  'config-service',
  'generator-service',
  'distribution-service',
  'relay',
  'dashboard-server',
] as const;
const TOKEN_SECRET = 'POLICYGEN_NODE_TOKEN_SECRET';

function read(path: string): string {
  return readFileSync(join(root, path), 'utf8');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function record(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

// ---- docker-compose.yml ----

interface Service {
  readonly name: string;
  readonly raw: Record<string, unknown>;
  readonly env: ReadonlyMap<string, string>;
  /** Service name → condition (`service_started` when the short form is used). */
  readonly dependsOn: ReadonlyMap<string, string>;
}

function environmentOf(raw: Record<string, unknown>): Map<string, string> {
  const env = new Map<string, string>();
  const value = raw['environment'];
  if (Array.isArray(value)) {
    for (const entry of value) {
      const [key = '', ...rest] = String(entry).split('=');
      env.set(key, rest.join('='));
    }
  } else {
    for (const [key, entry] of Object.entries(record(value)))
      env.set(key, entry == null ? '' : String(entry));
  }
  return env;
}

function dependsOnOf(raw: Record<string, unknown>): Map<string, string> {
  const value = raw['depends_on'];
  if (Array.isArray(value)) return new Map(value.map((name) => [String(name), 'service_started']));
  return new Map(
    Object.entries(record(value)).map(([name, spec]) => [
      name,
      String(record(spec)['condition'] ?? 'service_started'),
    ]),
  );
}

// Compose resolves YAML merge keys (`<<: *anchor`); so does this parse.
const compose = record(parse(read(COMPOSE_FILE), { merge: true }));
const services: Service[] = Object.entries(record(compose['services'])).map(([name, value]) => {
  const raw = record(value);
  return { name, raw, env: environmentOf(raw), dependsOn: dependsOnOf(raw) };
});
const serviceByName = new Map(services.map((service) => [service.name, service]));

// ---- the Dockerfiles ----

interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

interface Stage {
  readonly name: string | undefined;
  readonly from: string;
  readonly instructions: Instruction[];
}

/** The stages of a Dockerfile, with continuation lines joined and comments left out. */
function parseDockerfile(text: string): Stage[] {
  const lines: string[] = [];
  let pending = '';
  for (const line of text.split('\n')) {
    if (/^\s*#/.test(line)) continue;
    const continued = /\\\s*$/.test(line);
    pending += continued ? line.replace(/\\\s*$/, ' ') : line;
    if (continued) continue;
    if (pending.trim() !== '') lines.push(pending.trim());
    pending = '';
  }
  const stages: Stage[] = [];
  for (const line of lines) {
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    if (keyword.toUpperCase() === 'FROM') {
      const [from = '', as, name] = args.split(/\s+/).filter((word) => !word.startsWith('--'));
      stages.push({ from, name: as?.toUpperCase() === 'AS' ? name : undefined, instructions: [] });
    } else {
      stages.at(-1)?.instructions.push({ keyword: keyword.toUpperCase(), args });
    }
  }
  return stages;
}

/** The stage a target names and the stages it is built FROM, nearest first. */
function chainOf(stages: readonly Stage[], target: string | undefined): Stage[] {
  const chain: Stage[] = [];
  let stage = target === undefined ? stages.at(-1) : stages.find((candidate) => candidate.name === target);
  while (stage !== undefined && !chain.includes(stage)) {
    chain.push(stage);
    const from = stage.from;
    stage = stages.find((candidate) => candidate.name === from);
  }
  return chain;
}

/** An instruction's arguments: the exec (JSON) form, else the words of the shell form. */
function words(args: string): string[] {
  try {
    const parsed: unknown = JSON.parse(args);
    if (Array.isArray(parsed)) return parsed.map(String);
  } catch {
    // the shell form
  }
  return args.split(/\s+/).filter((word) => word !== '');
}

/** The command a container of the image runs: its ENTRYPOINT then its CMD, from the nearest stage. */
function commandOf(chain: readonly Stage[]): string[] {
  const last = (keyword: string): string[] => {
    for (const stage of chain) {
      const found = stage.instructions.filter((instruction) => instruction.keyword === keyword).at(-1);
      if (found) return words(found.args);
    }
    return [];
  };
  return [...last('ENTRYPOINT'), ...last('CMD')];
}

interface Image {
  readonly service: Service;
  /** The build context, relative to the repository root. */
  readonly context: string;
  readonly dockerfile: string;
  readonly target: string | undefined;
  readonly stages: Stage[];
  readonly chain: Stage[];
  readonly command: string[];
  /** `x` of the `dist/x/main.js` the command runs. */
  readonly app: string | undefined;
}

function imageOf(service: Service): Image {
  const build = service.raw['build'];
  const context = typeof build === 'string' ? build : String(record(build)['context'] ?? '.');
  const dockerfile = posix.normalize(
    posix.join(context, String(record(build)['dockerfile'] ?? 'Dockerfile')),
  );
  const targetValue = record(build)['target'];
  const target = typeof targetValue === 'string' ? targetValue : undefined;
  const stages = existsSync(join(root, dockerfile)) ? parseDockerfile(read(dockerfile)) : [];
  const chain = chainOf(stages, target);
  const command = commandOf(chain);
  const app = command
    .map((word) => /^(?:\.\/|\/app\/)?dist\/([^/]+)\/main\.js$/.exec(word)?.[1])
    .find((found) => found !== undefined);
  return { service, context, dockerfile, target, stages, chain, command, app };
}

const images = services.filter((service) => service.raw['build'] !== undefined).map(imageOf);
const appOf = new Map(images.map((image) => [image.service.name, image.app]));
const servicesOfApp = (app: string): Service[] =>
  images.filter((image) => image.app === app).map((image) => image.service);

// ---- the sources ----

/** The services tools/build/bundle-cli.mjs bundles into dist/<service>/main.js. */
function bundledServices(): string[] {
  const text = read(BUNDLER);
  const names = /const services\s*=\s*\[([^\]]*)\]/.exec(text)?.[1] ?? '';
  const writesMain = /'dist',\s*service,\s*'main\.js'/.test(text);
  return writesMain ? [...names.matchAll(/['"]([^'"]+)['"]/g)].map((match) => match[1] ?? '') : [];
}

/** Where an app reads its environment: src/main.ts and src/runtime/*.ts (not the tests). */
function sourcesOf(app: string): { missing: string | undefined; text: string } {
  const main = `apps/${app}/src/main.ts`;
  if (!existsSync(join(root, main))) return { missing: main, text: '' };
  const runtime = `apps/${app}/src/runtime`;
  const extra = existsSync(join(root, runtime))
    ? readdirSync(join(root, runtime))
        .filter((file) => file.endsWith('.ts') && !file.endsWith('.spec.ts'))
        .map((file) => `${runtime}/${file}`)
    : [];
  return { missing: undefined, text: [main, ...extra].map(read).join('\n') };
}

/** The host (and port) a variable's value points at: a URL, or KAFKA_BROKERS' host:port list. */
function endpointsOf(name: string, value: string): { host: string; port: string }[] {
  if (name === 'KAFKA_BROKERS') {
    return value.split(',').map((broker) => {
      const [host = '', port = ''] = broker.trim().split(':');
      return { host, port };
    });
  }
  if (!name.endsWith('_URL')) return [];
  try {
    const url = new URL(value);
    return [{ host: url.hostname, port: url.port }];
  } catch {
    return [];
  }
}

function portsOf(service: Service): { host: string; container: string }[] {
  return list(service.raw['ports']).map((entry) => {
    if (isRecord(entry))
      return { host: String(entry['published'] ?? ''), container: String(entry['target']) };
    const parts = String(entry).split('/')[0]?.split(':') ?? [];
    return { host: parts.length > 1 ? (parts.at(-2) ?? '') : '', container: parts.at(-1) ?? '' };
  });
}

function volumesOf(service: Service): { source: string; target: string }[] {
  return list(service.raw['volumes']).map((entry) => {
    if (isRecord(entry)) return { source: String(entry['source'] ?? ''), target: String(entry['target']) };
    const [source = '', target = ''] = String(entry).split(':');
    return { source, target };
  });
}

// ---- the checks ----

describe('docker-compose.yml', () => {
  it('runs every Policygen app, two generator instances and two relays', () => {
    expect([...new Set(images.map((image) => image.app))].sort()).toEqual([...APPS].sort());
    expect(servicesOfApp('generator-service').length).toBeGreaterThanOrEqual(2);
    expect(servicesOfApp('relay').length).toBeGreaterThanOrEqual(2);
  });

  it('names only services of the file in depends_on, and waits for health only where there is a health check', () => {
    const problems = services.flatMap((service) =>
      [...service.dependsOn].flatMap(([name, condition]) => {
        const target = serviceByName.get(name);
        if (!target) return [`${service.name} depends on ${name}, which is not a service of the file`];
        const check = record(target.raw['healthcheck']);
        if (
          condition === 'service_healthy' &&
          (list(check['test']).length === 0 || check['disable'] === true)
        )
          return [`${service.name} waits for ${name} to be healthy, which has no health check`];
        return [];
      }),
    );
    expect(problems).toEqual([]);
  });

  it('has no dependency cycle', () => {
    const cycles: string[] = [];
    const visit = (name: string, path: readonly string[]): void => {
      if (path.includes(name)) {
        cycles.push([...path, name].join(' -> '));
        return;
      }
      for (const next of serviceByName.get(name)?.dependsOn.keys() ?? []) visit(next, [...path, name]);
    };
    for (const service of services) visit(service.name, []);
    expect(cycles).toEqual([]);
  });

  it('gives every Policygen service a health check and an init process, and its dependencies start healthy first', () => {
    const problems = images.flatMap(({ service }) => {
      const found: string[] = [];
      if (list(record(service.raw['healthcheck'])['test']).length === 0)
        found.push(`${service.name} has no health check`);
      if (service.raw['init'] !== true) found.push(`${service.name} does not run under an init (init: true)`);
      for (const [name, condition] of service.dependsOn)
        if (condition !== 'service_healthy') found.push(`${service.name} waits for ${name} only to start`);
      return found;
    });
    expect(problems).toEqual([]);
  });

  it('points every URL and broker list at a service of the file, which the service depends on', () => {
    const problems = images.flatMap(({ service }) =>
      [...service.env].flatMap(([name, value]) =>
        endpointsOf(name, value).flatMap(({ host, port }) => {
          const target = serviceByName.get(host);
          if (!target) return [`${service.name}: ${name}=${value} names ${host}, not a service of the file`];
          const found: string[] = [];
          if (!service.dependsOn.has(host))
            found.push(`${service.name} talks to ${host} but does not depend on it`);
          const targetPort = target.env.get('PORT');
          if (appOf.get(host) !== undefined && port !== targetPort)
            found.push(
              `${service.name}: ${name}=${value}, but ${host} listens on PORT ${String(targetPort)}`,
            );
          return found;
        }),
      ),
    );
    expect(problems).toEqual([]);
  });

  it('publishes config-service on 3001, distribution on 3003 and the relays on 3004 and 3005, each on its PORT', () => {
    const published = (app: string): string[] =>
      servicesOfApp(app)
        .flatMap((service) => portsOf(service).map(({ host }) => host))
        .sort();
    expect(published('config-service')).toEqual(['3001']);
    expect(published('distribution-service')).toEqual(['3003']);
    expect(published('relay')).toEqual(['3004', '3005']);
    const problems = images.flatMap(({ service }) =>
      portsOf(service)
        .filter(({ container }) => container !== service.env.get('PORT'))
        .map(
          ({ host, container }) =>
            `${service.name} publishes ${host}:${container} but its PORT is ${String(service.env.get('PORT'))}`,
        ),
    );
    expect(problems).toEqual([]);
    const hostPorts = services.flatMap((service) => portsOf(service).map(({ host }) => host)).filter(Boolean);
    expect(hostPorts).toEqual([...new Set(hostPorts)]);
  });

  it('gives distribution-service and each relay a named volume of its own on POLICYGEN_DATA_DIR', () => {
    const declared = Object.keys(record(compose['volumes']));
    const used: string[] = [];
    const problems = [...servicesOfApp('distribution-service'), ...servicesOfApp('relay')].flatMap(
      (service) => {
        const dataDir = service.env.get('POLICYGEN_DATA_DIR');
        const volume = volumesOf(service).find(({ target }) => target === dataDir);
        if (dataDir === undefined || volume === undefined)
          return [`${service.name}: no volume on POLICYGEN_DATA_DIR (${String(dataDir)})`];
        used.push(volume.source);
        return declared.includes(volume.source)
          ? []
          : [`${service.name}: volume ${volume.source} is not declared under volumes:`];
      },
    );
    expect(problems).toEqual([]);
    expect(used).toEqual([...new Set(used)]);
  });

  it('gives config-service and distribution-service the same node-token secret, as a Docker secret file', () => {
    const users = [...servicesOfApp('config-service'), ...servicesOfApp('distribution-service')];
    expect(users.length).toBeGreaterThanOrEqual(2);
    const files = users.map((service) => service.env.get(`${TOKEN_SECRET}_FILE`));
    expect(new Set(files).size).toBe(1);
    const secretName = /^\/run\/secrets\/(.+)$/.exec(files[0] ?? '')?.[1];
    expect(secretName).toBeDefined();
    // No literal and no fallback anywhere in the file: a secret comes from the host, or nothing starts.
    expect(users.map((service) => service.env.get(TOKEN_SECRET))).toEqual(users.map(() => undefined));
    for (const service of users) expect(service.raw['secrets']).toContain(secretName);
    const declared = record(record(compose['secrets'])[String(secretName)]);
    expect(declared['file']).toBe('./deploy/secrets/node-token-secret');
    expect(read('.gitignore')).toContain('deploy/secrets/');
  });
});

describe('the API tokens of the compose file', () => {
  it('give config-service its bootstrap admin token, and the services that read the configuration the one token it accepts as theirs', () => {
    const [config] = servicesOfApp('config-service');
    expect(config?.env.get('POLICYGEN_ADMIN_TOKEN_FILE')).toBe('/run/secrets/admin_token');
    const serviceToken = config?.env.get('POLICYGEN_SERVICE_TOKEN_FILE');
    expect(serviceToken).toBe('/run/secrets/service_token');
    const readers = services.filter(
      (service) => service.env.has('CONFIG_SERVICE_URL') && appOf.get(service.name) !== 'dashboard-server',
    );
    expect(readers.length).toBeGreaterThanOrEqual(3);
    for (const reader of readers) {
      expect({ service: reader.name, file: reader.env.get('POLICYGEN_SERVICE_TOKEN_FILE') }).toEqual({
        service: reader.name,
        file: serviceToken,
      });
      expect(reader.raw['secrets']).toContain('service_token');
    }
    expect(record(record(compose['secrets'])['admin_token'])['file']).toBe('./deploy/secrets/admin-token');
  });
});

describe('the relays of the compose file', () => {
  it('each have their own credential for their parent, as a Docker secret file of their own', () => {
    const relays = servicesOfApp('relay');
    expect(relays.length).toBeGreaterThanOrEqual(2);
    const secretNames = relays.map((relay) => {
      expect(relay.env.get('POLICYGEN_RELAY_TOKEN')).toBeUndefined();
      const name = /^\/run\/secrets\/(.+)$/.exec(relay.env.get('POLICYGEN_RELAY_TOKEN_FILE') ?? '')?.[1];
      expect({ relay: relay.name, secret: name }).toEqual({ relay: relay.name, secret: expect.any(String) });
      expect(relay.raw['secrets']).toContain(name);
      const file = String(record(record(compose['secrets'])[String(name)])['file']);
      expect(file).toMatch(/^\.\/deploy\/secrets\//);
      return name;
    });
    expect(new Set(secretNames).size).toBe(relays.length);
  });
});

describe('the secrets of the compose file', () => {
  it('come from files or the host environment, never literals: no password, secret or credential in a URL', () => {
    const literals = services.flatMap((service) =>
      [...service.env].flatMap(([key, value]) => {
        const credentialInUrl = /:\/\/[^:/@\s]+:[^@\s]+@/.test(value);
        const secretKey = /PASSWORD|SECRET|TOKEN/.test(key) && !key.endsWith('_FILE');
        // `${VAR:-}`: the host's value or nothing, as Grafana's admin password.
        const fromHost = /^\$\{[A-Z_]+:-\}$/.test(value);
        return credentialInUrl || (secretKey && !fromHost) ? [`${service.name}: ${key}`] : [];
      }),
    );
    expect(literals).toEqual([]);
    const declared = Object.keys(record(compose['secrets']));
    const used = [
      ...new Set(services.flatMap((service) => (service.raw['secrets'] as string[] | undefined) ?? [])),
    ];
    expect(used.sort()).toEqual(declared.sort());
  });
});

describe('the generator instances', () => {
  const generators = servicesOfApp('generator-service');

  it('share one consumer group, and one partition count with distribution-service', () => {
    const groups = generators.map((service) => service.env.get('POLICYGEN_GENERATOR_GROUP'));
    expect(groups.every((group) => group !== undefined && group !== '')).toBe(true);
    expect(new Set(groups).size).toBe(1);
    // Either may create the request and bundle topics first: they must agree on the partitions.
    const creators = [...generators, ...servicesOfApp('distribution-service')];
    expect(new Set(creators.map((service) => service.env.get('POLICYGEN_PARTITIONS'))).size).toBe(1);
  });

  it('have distinct instance ids (a replicated service leaves the id to the host name)', () => {
    const fixed = generators.filter((service) => service.env.has('POLICYGEN_INSTANCE_ID'));
    const ids = fixed.map((service) => service.env.get('POLICYGEN_INSTANCE_ID'));
    expect(ids).toEqual([...new Set(ids)]);
    const replicated = fixed.filter((service) => {
      const replicas = record(service.raw['deploy'])['replicas'] ?? service.raw['scale'] ?? 1;
      return Number(replicas) > 1;
    });
    expect(replicated.map((service) => service.name)).toEqual([]);
    expect(generators.length).toBeGreaterThanOrEqual(2);
  });
});

describe('the relays', () => {
  const relays = servicesOfApp('relay');

  it('each follow distribution-service or another relay of the file, up to distribution-service', () => {
    const problems = relays.flatMap((relay) => {
      const path = [relay.name];
      let current: Service | undefined = relay;
      while (current !== undefined && appOf.get(current.name) === 'relay') {
        const parent = current.env.get('POLICYGEN_PARENT_URL') ?? '';
        let host = '';
        try {
          host = new URL(parent).hostname;
        } catch {
          return [`${current.name}: POLICYGEN_PARENT_URL ${JSON.stringify(parent)} is not a URL`];
        }
        if (path.includes(host)) return [`${relay.name}: parent cycle ${[...path, host].join(' -> ')}`];
        path.push(host);
        current = serviceByName.get(host);
      }
      if (current === undefined) return [`${relay.name}: parent ${path.at(-1)} is not a service of the file`];
      return appOf.get(current.name) === 'distribution-service'
        ? []
        : [`${relay.name}: its parents end at ${current.name}, not at distribution-service`];
    });
    expect(problems).toEqual([]);
  });

  it('are the relays below root, each once: distribution-service is relay root itself', () => {
    const ids = relays.map((relay) => relay.env.get('POLICYGEN_RELAY_ID'));
    // A relay named root would be a second copy of the root's store on another disk, confirming
    // what distribution-service confirms already.
    expect(ids).not.toContain('root');
    expect(ids).toEqual([...new Set(ids)]);
    const parentApp = (relay: Service): string | undefined => {
      try {
        return appOf.get(new URL(relay.env.get('POLICYGEN_PARENT_URL') ?? '').hostname);
      } catch {
        return undefined;
      }
    };
    expect(relays.map(parentApp)).toEqual(relays.map(() => 'distribution-service'));
  });
});

describe.each(images.map((image) => [image.service.name, image] as const))('the image of %s', (_, image) => {
  it('comes from a multi-stage Dockerfile on node:20-bookworm-slim', () => {
    expect(existsSync(join(root, image.dockerfile))).toBe(true);
    expect(image.stages.length).toBeGreaterThanOrEqual(2);
    expect(image.chain.length).toBeGreaterThan(0);
    expect(image.chain.at(-1)?.from).toBe(NODE_IMAGE);
  });

  it('runs a dist/<app>/main.js that tools/build/bundle-cli.mjs builds', () => {
    expect(image.command).toContain(`dist/${String(image.app)}/main.js`);
    expect(APPS).toContain(image.app);
    const bundled = bundledServices();
    const problems = bundled.includes(String(image.app))
      ? []
      : [`${BUNDLER} does not build dist/${String(image.app)}/main.js (its services: ${bundled.join(', ')})`];
    expect(problems).toEqual([]);
  });

  it('runs as a user other than root', () => {
    const user = image.chain
      .flatMap((stage) => stage.instructions.filter((instruction) => instruction.keyword === 'USER'))
      .at(0)?.args;
    expect(user).toBeDefined();
    expect(['root', '0', '0:0']).not.toContain(user);
  });

  it('installs with npm ci in a build stage and keeps only production dependencies', () => {
    const runs = (stages: readonly Stage[]): string =>
      stages
        .flatMap((stage) => stage.instructions.filter((instruction) => instruction.keyword === 'RUN'))
        .map((instruction) => instruction.args)
        .join('\n');
    const buildStages = image.stages.filter((stage) => !image.chain.includes(stage));
    expect(runs(buildStages)).toMatch(/\bnpm ci\b/);
    expect(runs(image.stages)).toMatch(/npm (prune|ci)\b[^\n]*--omit=dev/);
  });

  it('has the health check script and the data folder where compose uses them', () => {
    const copies = image.chain.flatMap((stage) =>
      stage.instructions
        .filter((instruction) => instruction.keyword === 'COPY')
        .map((copy) => words(copy.args)),
    );
    const scripts = list(record(image.service.raw['healthcheck'])['test']).filter(
      (word): word is string => typeof word === 'string' && word.startsWith('/app/'),
    );
    const missing = scripts.filter((script) => {
      const source = copies.find((args) => args.at(-1) === script)?.at(-2);
      return source === undefined || !existsSync(join(root, image.context, source));
    });
    expect(missing).toEqual([]);
    const dataDir = image.service.env.get('POLICYGEN_DATA_DIR');
    const runs = image.chain.flatMap((stage) =>
      stage.instructions.filter((instruction) => instruction.keyword === 'RUN').map((run) => run.args),
    );
    // A new named volume takes the owner of its mount point: the service's user must own it.
    const owned = dataDir === undefined || runs.some((run) => run.includes('chown') && run.includes(dataDir));
    expect(owned).toBe(true);
  });
});

describe('the build context', () => {
  it('leaves node_modules, dist and .env files out (.dockerignore)', () => {
    const patterns = existsSync(join(root, '.dockerignore'))
      ? read('.dockerignore')
          .split('\n')
          .map((line) => line.trim())
      : [];
    expect(patterns.some((pattern) => /^(\*\*\/)?node_modules\/?$/.test(pattern))).toBe(true);
    expect(patterns.some((pattern) => /^\/?dist\/?$/.test(pattern))).toBe(true);
    expect(patterns).toContain('.env');
  });

  it('denies every dependency install script that npm ci --ignore-scripts skips (allowScripts)', () => {
    const dockerfiles = [...new Set(images.map((image) => image.dockerfile))].filter((file) =>
      existsSync(join(root, file)),
    );
    const ignoring = dockerfiles.filter((file) => /npm ci\b[^\n]*--ignore-scripts/.test(read(file)));
    const allowScripts = record(record(JSON.parse(read('package.json')))['allowScripts']);
    const lock = record(JSON.parse(read('package-lock.json')));
    const withScripts = Object.entries(record(lock['packages']))
      .filter(([path, entry]) => path !== '' && record(entry)['hasInstallScript'] === true)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    const allowed = [...new Set(withScripts)].filter((name) =>
      Object.entries(allowScripts).some(
        ([key, value]) => value !== false && (key === name || key.startsWith(`${name}@`)),
      ),
    );
    expect(ignoring.length === 0 ? [] : allowed).toEqual([]);
    // --ignore-scripts also skips `prepare`, the build: the Dockerfile runs it itself.
    expect(ignoring.filter((file) => !/npm run build\b/.test(read(file)))).toEqual([]);
  });
});

describe('deploy/README.md', () => {
  it('names every published port and every Policygen service', () => {
    const readme = existsSync(join(root, 'deploy/README.md')) ? read('deploy/README.md') : '';
    const ports = services.flatMap((service) => portsOf(service).map(({ host }) => host)).filter(Boolean);
    expect(ports.filter((port) => !readme.includes(port))).toEqual([]);
    expect(images.map((image) => image.service.name).filter((name) => !readme.includes(name))).toEqual([]);
  });
});

describe.each(APPS.map((app) => [app]))('apps/%s', (app) => {
  it('reads every environment variable compose sets for it (in src/main.ts or src/runtime/*.ts)', () => {
    const names = [...new Set(servicesOfApp(app).flatMap((service) => [...service.env.keys()]))].sort();
    const { missing, text } = sourcesOf(app);
    const problems =
      missing !== undefined
        ? [`${missing} does not exist yet: cannot check that the app reads ${names.join(', ')}`]
        : names
            // `<NAME>_FILE` is `<NAME>` read from a file (readEnvironment, in service-kit).
            .filter((name) => !text.includes(name.replace(/_FILE$/, '')))
            .map((name) => `${name} is set in compose but not read`);
    expect(problems).toEqual([]);
  });
});
