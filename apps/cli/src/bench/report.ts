import type { BenchReport, ScenarioResult } from './run-bench';

const COLUMNS: readonly { readonly title: string; readonly value: (result: ScenarioResult) => string }[] = [
  { title: 'scenario', value: (r) => r.scenario },
  { title: 'change sets', value: (r) => String(r.changeSets) },
  { title: 'engine ms', value: (r) => milliseconds(r.engineMs) },
  { title: 'affected', value: (r) => String(r.affected) },
  { title: 'recomputed', value: (r) => String(r.recomputed) },
  { title: 'changed', value: (r) => String(r.changed) },
  { title: 'naive ms', value: (r) => (r.naiveMs === null ? '-' : milliseconds(r.naiveMs)) },
  {
    title: 'speed-up',
    value: (r) =>
      r.speedup === null ? '-' : `${r.speedup >= 100 ? Math.round(r.speedup) : r.speedup.toFixed(1)}x`,
  },
  { title: 'peak RSS MiB', value: (r) => String(r.peakRssMiB) },
];

function milliseconds(value: number): string {
  if (value >= 100) return value.toFixed(0);
  if (value >= 1) return value.toFixed(1);
  return value.toFixed(3);
}

/** The benchmark as a plain-text table, one scenario per row, with the fleet and machine above. */
export function formatBenchTable(report: BenchReport): string {
  const { fleet, machine } = report;
  const rows = report.scenarios.map((result) => COLUMNS.map((column) => column.value(result)));
  const widths = COLUMNS.map((column, index) =>
    Math.max(column.title.length, ...rows.map((row) => (row[index] as string).length)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, index) =>
        index === 0 ? cell.padEnd(widths[index] as number) : cell.padStart(widths[index] as number),
      )
      .join('  ');
  return [
    `fleet: ${fleet.nodes} nodes, ${fleet.groups} groups, ${fleet.directives} directives on ${fleet.techniques} techniques, ` +
      `${fleet.rules} rules, ${fleet.relays} relays (seed ${fleet.seed}); ${fleet.policiesPerNode} policies per node, ` +
      `${fleet.failedNodes} failed nodes; built in ${milliseconds(fleet.buildMs)} ms, validated in ${milliseconds(fleet.validateMs)} ms`,
    `machine: ${machine.cpus} CPUs, load average ${machine.loadAverage.map((load) => load.toFixed(2)).join(' ')}, node ${machine.node}`,
    '',
    line(COLUMNS.map((column) => column.title)),
    line(widths.map((width) => '-'.repeat(width))),
    ...rows.map(line),
  ].join('\n');
}
