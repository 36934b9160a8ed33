/**
 * The `observability` compose profile agrees with the stack and with the metrics the services serve:
 * Prometheus (deploy/prometheus/prometheus.yml) scrapes every Policygen service of docker-compose.yml
 * at the port it listens on, and the Grafana dashboard (deploy/grafana) reads only Prometheus, by its
 * provisioned uid, and only metrics of OBSERVABILITY_METRICS (./observability-metrics.ts) with their
 * labels. No Docker, Prometheus or Grafana needed: the files are read and cross-checked.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { parse } from 'yaml';
import { OBSERVABILITY_METRICS } from './observability-metrics';

const root = join(__dirname, '..', '..');
const COMPOSE_FILE = 'docker-compose.yml';
const PROMETHEUS_CONFIG = 'deploy/prometheus/prometheus.yml';
const DATASOURCES = 'deploy/grafana/provisioning/datasources/prometheus.yml';
const DASHBOARD_PROVIDERS = 'deploy/grafana/provisioning/dashboards/policygen.yml';
const DASHBOARD = 'deploy/grafana/dashboards/policygen.json';
const README = 'deploy/README.md';
const PROFILE = 'observability';
const DATASOURCE_UID = 'policygen-prometheus';
const SCRAPE_INTERVAL = '5s';

/** The scrape job of each kind of Policygen service, by the Dockerfile target its image is built from. */
const JOB_OF_TARGET: Readonly<Record<string, string>> = {
  'config-service': 'config-service',
  'generator-service': 'generator',
  'distribution-service': 'distribution-service',
  relay: 'relay',
  dashboard: 'dashboard',
};

/** The labels Prometheus gives every series it scrapes. */
const TARGET_LABELS = ['job', 'instance'];
/** Series Prometheus makes itself at each scrape: `up` is 1 when the target answered. */
const SCRAPE_SERIES = ['up'];
const HISTOGRAM_SUFFIXES = ['_bucket', '_count', '_sum'];

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

function text(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : '';
}

// ---- docker-compose.yml ----

interface Service {
  readonly name: string;
  readonly raw: Record<string, unknown>;
  readonly env: ReadonlyMap<string, string>;
}

function environmentOf(raw: Record<string, unknown>): Map<string, string> {
  const value = raw['environment'];
  if (Array.isArray(value)) {
    return new Map(
      value.map((entry) => {
        const [key = '', ...rest] = String(entry).split('=');
        return [key, rest.join('=')];
      }),
    );
  }
  return new Map(Object.entries(record(value)).map(([key, entry]) => [key, text(entry)]));
}

// Compose resolves YAML merge keys (`<<: *anchor`); so does this parse.
const compose = record(parse(read(COMPOSE_FILE), { merge: true }));
const services: Service[] = Object.entries(record(compose['services'])).map(([name, value]) => {
  const raw = record(value);
  return { name, raw, env: environmentOf(raw) };
});
const serviceByName = new Map(services.map((service) => [service.name, service]));
/** The Policygen services: those compose builds (from deploy/Dockerfile, one target per kind). */
const policygenServices = services.filter((service) => service.raw['build'] !== undefined);

function targetOf(service: Service): string {
  return text(record(service.raw['build'])['target']);
}

function profilesOf(service: Service): string[] {
  return list(service.raw['profiles']).map(String);
}

interface Mount {
  /** Relative to the repository root for a bind mount (`./…`), else the volume's name. */
  readonly source: string;
  readonly target: string;
  readonly bind: boolean;
  readonly readOnly: boolean;
}

function mountsOf(service: Service): Mount[] {
  return list(service.raw['volumes']).map((entry) => {
    let source: string;
    let target: string;
    let readOnly: boolean;
    if (isRecord(entry)) {
      source = text(entry['source']);
      target = text(entry['target']);
      readOnly = entry['read_only'] === true;
    } else {
      const [from = '', to = '', mode = ''] = String(entry).split(':');
      source = from;
      target = to;
      readOnly = mode.split(',').includes('ro');
    }
    const bind = source.startsWith('.') || source.startsWith('/');
    return { source: bind ? posix.normalize(source) : source, target, bind, readOnly };
  });
}

/** The file of the repository a path inside a service's container shows, through its bind mounts. */
function hostPathOf(service: Service, containerPath: string): string | undefined {
  const mount = mountsOf(service)
    .filter(
      ({ bind, target }) => bind && (containerPath === target || containerPath.startsWith(`${target}/`)),
    )
    .sort((a, b) => b.target.length - a.target.length)[0];
  return mount && posix.join(mount.source, containerPath.slice(mount.target.length));
}

function containerPortsOf(service: Service): string[] {
  return list(service.raw['ports']).map((entry) =>
    isRecord(entry) ? text(entry['target']) : (String(entry).split('/')[0]?.split(':').at(-1) ?? ''),
  );
}

// ---- prometheus.yml ----

interface ScrapeTarget {
  readonly job: string;
  readonly address: string;
  /** Its labels after the job's relabel_configs. */
  readonly labels: ReadonlyMap<string, string>;
}

const prometheus = record(parse(read(PROMETHEUS_CONFIG)));
const scrapeConfigs = list(prometheus['scrape_configs']).map(record);
const jobNames = scrapeConfigs.map((config) => text(config['job_name']));

/** Prometheus' `replace` relabelling (the only action used here): regexes anchored at both ends. */
function relabel(labels: Map<string, string>, configs: readonly unknown[]): Map<string, string> {
  for (const config of configs.map(record)) {
    const action = text(config['action']) || 'replace';
    if (action !== 'replace') throw new Error(`relabel action ${action} is not simulated here`);
    const value = list(config['source_labels'])
      .map((name) => labels.get(String(name)) ?? '')
      .join(text(config['separator']) || ';');
    const match = new RegExp(`^(?:${text(config['regex']) || '(.*)'})$`).exec(value);
    if (match === null) continue;
    const replacement = config['replacement'] === undefined ? '$1' : text(config['replacement']);
    const result = replacement.replace(
      /\$\{(\w+)\}|\$(\d+)/g,
      (_, braced?: string, plain?: string) => match[Number(braced ?? plain)] ?? '',
    );
    const target = text(config['target_label']);
    if (result === '') labels.delete(target);
    else labels.set(target, result);
  }
  return labels;
}

const scrapeTargets: ScrapeTarget[] = scrapeConfigs.flatMap((config) => {
  const job = text(config['job_name']);
  return list(config['static_configs']).flatMap((group) =>
    list(record(group)['targets']).map((address) => {
      const labels = new Map([
        ['__address__', String(address)],
        ['job', job],
        ...Object.entries(record(record(group)['labels'])).map(([key, value]) => [key, text(value)] as const),
      ]);
      relabel(labels, list(config['relabel_configs']));
      if (!labels.has('instance')) labels.set('instance', labels.get('__address__') ?? '');
      return { job, address: String(address), labels };
    }),
  );
});

// ---- the Grafana provisioning and dashboard ----

const datasources = list(record(parse(read(DATASOURCES)))['datasources']).map(record);
const providers = list(record(parse(read(DASHBOARD_PROVIDERS)))['providers']).map(record);
const dashboard = record(JSON.parse(read(DASHBOARD)));

/** Every panel, those inside rows included. */
function panelsOf(container: Record<string, unknown>): Record<string, unknown>[] {
  return list(container['panels'])
    .map(record)
    .flatMap((panel) => [panel, ...panelsOf(panel)]);
}

const panels = panelsOf(dashboard);
const queryPanels = panels.filter((panel) => panel['type'] !== 'row');
const variables = list(record(dashboard['templating'])['list']).map(record);

interface Query {
  readonly where: string;
  readonly expr: string;
}

/** Every PromQL expression of the dashboard: the panels' targets and the query variables. */
const queries: Query[] = [
  ...queryPanels.flatMap((panel) =>
    list(panel['targets'])
      .map(record)
      .map((target) => ({
        where: `panel "${text(panel['title'])}" ${text(target['refId'])}`,
        expr: text(target['expr']),
      })),
  ),
  ...variables
    .filter((variable) => variable['type'] === 'query')
    .map((variable) => {
      const query = variable['query'];
      return {
        where: `variable $${text(variable['name'])}`,
        expr: isRecord(query) ? text(query['query']) : text(query),
      };
    }),
];

// ---- PromQL, as far as the checks need it ----

const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset']);
const BINARY_WORDS = new Set(['and', 'or', 'unless', 'atan2']);
const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);

interface Selector {
  readonly metric: string;
  /** The label names its matchers use. */
  readonly labels: string[];
}

interface Usage {
  readonly selectors: Selector[];
  /** The label names of `by`, `without`, `on`, `ignoring` and `group_*` clauses. */
  readonly groupings: string[];
  /** Dashboard variables the expression uses (`$stage`, `${stage}`), Grafana's own `$__…` left out. */
  readonly variables: string[];
}

/**
 * The metrics, labels and dashboard variables an expression uses. Grafana's `label_values(selector,
 * label)` counts as the selector grouped by the label. Strings and durations are left out, so label
 * values and ranges never pass for names.
 */
function usageOf(expr: string): Usage {
  const variableNames = [...expr.matchAll(/\$\{(\w+)[^}]*\}|\$(\w+)/g)]
    .map((match) => match[1] ?? match[2] ?? '')
    .filter((name) => !name.startsWith('__'));
  const labelValues = /^\s*label_values\((.*),\s*([A-Za-z_]\w*)\s*\)\s*$/.exec(expr);
  const promql = labelValues ? (labelValues[1] ?? '') : expr;
  const tokens: string[] =
    promql
      .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
      .replace(/\[[^\]]*\]/g, ' ')
      .replace(/\$\{[^}]*\}|\$\w+/g, ' ')
      .match(/[A-Za-z_:][\w:]*|\d+(?:\.\d+)?(?:e[+-]?\d+)?|=~|!~|!=|==|[{}(),=]|""|\S/g) ?? [];
  const selectors: Selector[] = [];
  const groupings = labelValues ? [labelValues[2] ?? ''] : [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] ?? '';
    const next = tokens[i + 1];
    if (!/^[A-Za-z_:]/.test(token)) continue;
    if (KEYWORDS.has(token)) {
      if (next === '(') {
        const end = tokens.indexOf(')', i);
        groupings.push(...tokens.slice(i + 2, end).filter((word) => word !== ','));
        i = end;
      }
      continue;
    }
    // An operator, a function, or an aggregation (whose `by`/`without` may come before its argument).
    if (BINARY_WORDS.has(token) || next === '(' || AGGREGATIONS.has(token)) continue;
    const labels: string[] = [];
    if (next === '{') {
      const end = tokens.indexOf('}', i);
      tokens.slice(i + 2, end).forEach((word, at, words) => {
        if (/^[A-Za-z_]/.test(word) && /^(=|!=|=~|!~)$/.test(words[at + 1] ?? '')) labels.push(word);
      });
      i = end;
    }
    selectors.push({ metric: token, labels });
  }
  return { selectors, groupings, variables: variableNames };
}

const metricByName = new Map(OBSERVABILITY_METRICS.map((metric) => [metric.name, metric]));

/** The labels a series name may carry, or undefined when it is none of OBSERVABILITY_METRICS' series. */
function labelsOfSeries(series: string): string[] | undefined {
  if (SCRAPE_SERIES.includes(series)) return [...TARGET_LABELS];
  const metric = metricByName.get(series);
  if (metric !== undefined && metric.type !== 'histogram') return [...metric.labels, ...TARGET_LABELS];
  for (const suffix of HISTOGRAM_SUFFIXES) {
    const histogram = series.endsWith(suffix) ? metricByName.get(series.slice(0, -suffix.length)) : undefined;
    if (histogram?.type === 'histogram')
      return [...histogram.labels, ...TARGET_LABELS, ...(suffix === '_bucket' ? ['le'] : [])];
  }
  return undefined;
}

/** The metric family a series belongs to (a histogram's, for its `_bucket`, `_count` and `_sum`). */
function familyOf(series: string): string {
  const suffix = HISTOGRAM_SUFFIXES.find(
    (end) => series.endsWith(end) && metricByName.get(series.slice(0, -end.length))?.type === 'histogram',
  );
  return suffix === undefined ? series : series.slice(0, -suffix.length);
}

// ---- the checks ----

describe('deploy/prometheus/prometheus.yml', () => {
  it(`scrapes every ${SCRAPE_INTERVAL}, one job per kind of Policygen service`, () => {
    const global = record(prometheus['global']);
    expect(text(global['scrape_interval'])).toBe(SCRAPE_INTERVAL);
    expect(jobNames).toEqual([...new Set(jobNames)]);
    expect([...jobNames].sort()).toEqual(expect.arrayContaining(Object.values(JOB_OF_TARGET).sort()));
    const overridden = scrapeConfigs.filter(
      (config) =>
        (config['scrape_interval'] !== undefined && config['scrape_interval'] !== SCRAPE_INTERVAL) ||
        ![undefined, '/metrics'].includes(config['metrics_path'] as string | undefined),
    );
    expect(overridden.map((config) => config['job_name'])).toEqual([]);
  });

  it('scrapes every Policygen service of docker-compose.yml at its PORT, in the job of its kind', () => {
    expect(policygenServices.length).toBeGreaterThan(0);
    const problems = policygenServices.flatMap((service) => {
      const job = JOB_OF_TARGET[targetOf(service)];
      if (job === undefined) return [`${service.name}: build target ${targetOf(service)} has no scrape job`];
      const address = `${service.name}:${String(service.env.get('PORT'))}`;
      const found = scrapeTargets.filter((target) => target.address === address);
      if (found.length === 0) return [`${service.name}: ${address} is not scraped`];
      return found
        .filter((target) => target.job !== job)
        .map((target) => `${service.name}: ${address} is scraped by job ${target.job}, not ${job}`);
    });
    expect(problems).toEqual([]);
  });

  it('scrapes no address but a Policygen service at its PORT in the Policygen jobs', () => {
    const jobs = new Set(Object.values(JOB_OF_TARGET));
    const expected = new Set(
      policygenServices.map((service) => `${service.name}:${String(service.env.get('PORT'))}`),
    );
    const stale = scrapeTargets
      .filter((target) => jobs.has(target.job) && !expected.has(target.address))
      .map((target) => `${target.job}: ${target.address}`);
    expect(stale).toEqual([]);
  });

  it('labels each target with its compose service as instance (generator-1, not generator-1:3002)', () => {
    const labelled = scrapeTargets
      .filter((target) => serviceByName.has(target.address.split(':')[0] ?? ''))
      .map((target) => [target.address, target.labels.get('instance')]);
    expect(labelled.length).toBe(policygenServices.length);
    expect(labelled).toEqual(labelled.map(([address]) => [address, address?.split(':')[0]]));
  });

  it('reads a token file only where docker-compose.yml mounts one into prometheus', () => {
    const service = serviceByName.get('prometheus');
    const files = scrapeConfigs.flatMap((config) =>
      ['authorization', 'oauth2', 'basic_auth']
        .map((key) => record(config[key]))
        .flatMap((auth) => [auth['credentials_file'], auth['password_file']])
        .filter((file): file is string => typeof file === 'string'),
    );
    const unmounted = files.filter(
      (file) => service === undefined || hostPathOf(service, file) === undefined,
    );
    expect(unmounted).toEqual([]);
  });
});

describe('the observability services of docker-compose.yml', () => {
  const prometheusService = serviceByName.get('prometheus');
  const grafana = serviceByName.get('grafana');

  it(`are prometheus and grafana, only in the ${PROFILE} profile; the Policygen services are in none`, () => {
    expect(prometheusService && profilesOf(prometheusService)).toEqual([PROFILE]);
    expect(grafana && profilesOf(grafana)).toEqual([PROFILE]);
    expect(policygenServices.filter((service) => profilesOf(service).length > 0).map((s) => s.name)).toEqual(
      [],
    );
  });

  it('mount files of the repository, read-only, where Prometheus and Grafana read them', () => {
    const binds = [prometheusService, grafana].flatMap((service) =>
      service === undefined ? [] : mountsOf(service).filter((mount) => mount.bind),
    );
    expect(binds.filter((mount) => !mount.readOnly).map((mount) => mount.source)).toEqual([]);
    expect(
      binds.filter((mount) => !existsSync(join(root, mount.source))).map((mount) => mount.source),
    ).toEqual([]);
    expect(prometheusService && hostPathOf(prometheusService, '/etc/prometheus/prometheus.yml')).toBe(
      PROMETHEUS_CONFIG,
    );
    const provisioning = '/etc/grafana/provisioning';
    expect(grafana && hostPathOf(grafana, `${provisioning}/datasources/prometheus.yml`)).toBe(DATASOURCES);
    expect(grafana && hostPathOf(grafana, `${provisioning}/dashboards/policygen.yml`)).toBe(
      DASHBOARD_PROVIDERS,
    );
  });

  it('give grafana an admin password from the environment, with no default, and anonymous viewers of the dashboard', () => {
    const password = grafana?.env.get('GF_SECURITY_ADMIN_PASSWORD') ?? '';
    // `${VAR}`, `${VAR:?…}`, `${VAR?…}` or an empty default (`${VAR:-}`): never a password of its own.
    expect(password).toMatch(/^\$\{GRAFANA_ADMIN_PASSWORD(?:(?::?\?[^}]*)|:?-)?\}$/);
    expect(grafana?.env.get('GF_AUTH_ANONYMOUS_ENABLED')).toBe('true');
    expect(grafana?.env.get('GF_AUTH_ANONYMOUS_ORG_ROLE')).toBe('Viewer');
    const home = grafana?.env.get('GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH');
    expect(grafana && home && hostPathOf(grafana, home)).toBe(DASHBOARD);
  });
});

describe('the Grafana provisioning', () => {
  it(`has one Prometheus datasource, uid ${DATASOURCE_UID}, at the prometheus service`, () => {
    expect(datasources.map((source) => [source['type'], source['uid']])).toEqual([
      ['prometheus', DATASOURCE_UID],
    ]);
    const url = new URL(text(datasources[0]?.['url']));
    const service = serviceByName.get(url.hostname);
    expect(service && profilesOf(service)).toEqual([PROFILE]);
    // Prometheus listens on 9090 inside its container; a published port maps onto that one.
    expect(url.port).toBe('9090');
    expect(service && containerPortsOf(service)).toContain(url.port);
  });

  it('loads the dashboards from the folder docker-compose.yml mounts from deploy/grafana/dashboards', () => {
    const grafana = serviceByName.get('grafana');
    const paths = providers.map((provider) => text(record(provider['options'])['path']));
    expect(providers.map((provider) => provider['type'])).toEqual(['file']);
    expect(paths.map((path) => grafana && hostPathOf(grafana, path))).toEqual([posix.dirname(DASHBOARD)]);
  });
});

describe('deploy/grafana/dashboards/policygen.json', () => {
  it('is the policygen dashboard, refreshed every 5 s', () => {
    expect(dashboard['uid']).toBe('policygen');
    expect(Number(dashboard['schemaVersion'])).toBeGreaterThanOrEqual(39);
    expect(dashboard['refresh']).toBe('5s');
  });

  it(`reads every panel, query and variable from the datasource ${DATASOURCE_UID}`, () => {
    const uidOf = (value: unknown): unknown => record(value)['uid'];
    const problems = [
      ...queryPanels.flatMap((panel) => [
        ...(uidOf(panel['datasource']) === DATASOURCE_UID ? [] : [`panel "${text(panel['title'])}"`]),
        ...list(panel['targets'])
          .filter((target) => uidOf(record(target)['datasource']) !== DATASOURCE_UID)
          .map((target) => `panel "${text(panel['title'])}" ${text(record(target)['refId'])}`),
      ]),
      ...variables
        .filter(
          (variable) => variable['type'] === 'query' && uidOf(variable['datasource']) !== DATASOURCE_UID,
        )
        .map((variable) => `variable $${text(variable['name'])}`),
    ];
    expect(problems).toEqual([]);
    expect(queryPanels.every((panel) => list(panel['targets']).length > 0)).toBe(true);
  });

  it('queries only metrics of OBSERVABILITY_METRICS (and Prometheus’ up)', () => {
    expect(queries.length).toBeGreaterThan(0);
    const unknown = queries.flatMap(({ where, expr }) => {
      const { selectors } = usageOf(expr);
      if (selectors.length === 0) return [`${where}: no metric in ${expr}`];
      return selectors
        .filter(({ metric }) => labelsOfSeries(metric) === undefined)
        .map(({ metric }) => `${where}: ${metric}`);
    });
    expect(unknown).toEqual([]);
  });

  it('uses only the labels of the metrics it queries', () => {
    const problems = queries.flatMap(({ where, expr }) => {
      const { selectors, groupings } = usageOf(expr);
      const known = selectors.map(({ metric }) => labelsOfSeries(metric) ?? []);
      const fromMatchers = selectors.flatMap(({ metric, labels }, at) =>
        labels.filter((label) => !known[at]?.includes(label)).map((label) => `${where}: ${metric}{${label}}`),
      );
      const fromGroupings = groupings
        .filter((label) => !known.some((labels) => labels.includes(label)))
        .map((label) => `${where}: by/without (${label})`);
      return [...fromMatchers, ...fromGroupings];
    });
    expect(problems).toEqual([]);
  });

  it('defines every variable its queries use', () => {
    const defined = variables.map((variable) => text(variable['name']));
    const undefinedVariables = queries.flatMap(({ where, expr }) =>
      usageOf(expr)
        .variables.filter((name) => !defined.includes(name))
        .map((name) => `${where}: $${name}`),
    );
    expect(undefinedVariables).toEqual([]);
  });

  it('shows every metric of OBSERVABILITY_METRICS', () => {
    const used = new Set(
      queries.flatMap(({ expr }) => usageOf(expr).selectors.map(({ metric }) => familyOf(metric))),
    );
    expect(OBSERVABILITY_METRICS.map((metric) => metric.name).filter((name) => !used.has(name))).toEqual([]);
  });

  it('lays its panels out on the 24-column grid, each with an id of its own', () => {
    const ids = panels.map((panel) => panel['id']);
    expect(ids).toEqual([...new Set(ids)]);
    const outside = panels.filter((panel) => {
      const { x, w } = record(panel['gridPos']);
      return typeof x !== 'number' || typeof w !== 'number' || x < 0 || w < 1 || x + w > 24;
    });
    expect(outside.map((panel) => panel['title'])).toEqual([]);
  });
});

describe('deploy/README.md', () => {
  it('documents every metric of OBSERVABILITY_METRICS with its type and labels, and the profile', () => {
    const readme = read(README);
    const undocumented = OBSERVABILITY_METRICS.filter((metric) => {
      const line = readme.split('\n').find((row) => row.includes(`\`${metric.name}\``));
      return (
        line === undefined ||
        !line.includes(metric.type) ||
        metric.labels.some((label) => !line.includes(`\`${label}\``))
      );
    }).map((metric) => metric.name);
    expect(undocumented).toEqual([]);
    expect(readme).toContain(`--profile ${PROFILE}`);
  });
});
