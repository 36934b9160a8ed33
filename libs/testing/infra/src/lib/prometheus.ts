// The package ships no types: the declaration beside this file gives them, to every project that imports this one.
// eslint-disable-next-line @typescript-eslint/triple-slash-reference
/// <reference path="./parse-prometheus-text-format.d.ts" />
import { spawnSync } from 'node:child_process';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';

export interface MetricFamily {
  readonly name: string;
  readonly type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
  readonly samples: readonly {
    readonly labels: Readonly<Record<string, string>>;
    /** A counter's or gauge's value; a histogram's count. */
    readonly value: number;
    readonly buckets?: Readonly<Record<string, number>>;
  }[];
}

/**
 * A `/metrics` answer, parsed by a Prometheus text-format parser (not by our own code): name →
 * family, each histogram also as its `_bucket`, `_sum` and `_count` series with their labels (the
 * parser folds a histogram's labelled series into one, so they are read again as untyped).
 */
export function parsePrometheusText(text: string): Map<string, MetricFamily> {
  const families = new Map<string, MetricFamily>();
  const asSeries = text.replace(/^# TYPE (\S+) (histogram|summary)$/gm, '# TYPE $1 untyped');
  const folded = parsePrometheusTextFormat(text).filter(
    (family) => family.type === 'HISTOGRAM' || family.type === 'SUMMARY',
  );
  for (const family of [...parsePrometheusTextFormat(asSeries), ...folded]) {
    // The untyped reading gives a series' family again after each of its other series' lines.
    const earlier = families.get(family.name);
    families.set(family.name, {
      name: family.name,
      type: family.type,
      samples: [
        ...(earlier?.type === family.type ? earlier.samples : []),
        ...family.metrics.map((metric) => ({
          labels: metric.labels ?? {},
          value: Number(metric.value ?? metric.count ?? Number.NaN),
          ...(metric.buckets
            ? {
                buckets: Object.fromEntries(
                  Object.entries(metric.buckets).map(([bound, count]) => [bound, Number(count)]),
                ),
              }
            : {}),
        })),
      ],
    });
  }
  return families;
}

/**
 * Prometheus's own checker (`promtool check metrics`, from the Debian package `prometheus`) on a
 * `/metrics` answer: the problems it finds, format or naming (an empty list when it is clean).
 */
export function promtoolProblems(text: string): string[] {
  const result = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if (result.error)
    throw new Error(`promtool is needed (apt-get install prometheus): ${result.error.message}`);
  return `${result.stdout}${result.stderr}`
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
}
