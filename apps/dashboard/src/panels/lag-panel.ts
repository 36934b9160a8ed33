import type { PipelineSnapshot, Stage, StageLag } from '../api/contract';
import { STAGES } from '../api/contract';
import { TimeChart } from '../charts/time-chart';
import { h, panelFrame, table } from '../dom';
import { formatInteger, formatMs } from '../format';
import type { SnapshotHistory } from '../history';
import type { Panel } from './panel';
import { ChangeGate } from './panel';

const PERCENTILES = ['p50', 'p95', 'p99'] as const;
const COLUMNS = ['count', 'p50', 'p95', 'p99', 'max'] as const;
type Column = (typeof COLUMNS)[number];

const STAGE_LABELS: Record<Stage, string> = {
  generated: 'generated',
  distributed: 'distributed',
  relay: 'on relay',
  fetched: 'fetched by node',
};

function stageRow(rows: readonly StageLag[], stage: Stage): StageLag | undefined {
  return rows.find((row) => row.stage === stage);
}

/**
 * Lag from a revision's commit to each stage: p50/p95/p99 of the steady state for one stage over
 * time, and the current figures of every stage, steady and catching up.
 */
export class LagPanel implements Panel {
  readonly element: HTMLElement;
  private stage: Stage = 'relay';
  private readonly chart: TimeChart;
  private readonly samples = h('span', { 'data-testid': 'lag-samples' }, '0');
  private readonly windowLabel = h('span', { class: 'muted' });
  private readonly steady = table('lag-table', ['steady state', ...COLUMNS]);
  private readonly catchUp = table('lag-table', ['catching up', ...COLUMNS]);
  private readonly tables = new ChangeGate();
  private history: SnapshotHistory | null = null;

  constructor() {
    const selector = h(
      'select',
      { 'data-testid': 'lag-stage', 'aria-label': 'stage' },
      ...STAGES.map((stage) =>
        h('option', { value: stage, selected: stage === this.stage }, STAGE_LABELS[stage]),
      ),
    );
    selector.addEventListener('change', () => {
      this.stage = selector.value as Stage;
      this.renderChart();
    });
    const { element, body } = panelFrame('lag-panel', 'Lag from commit', h('label', {}, 'stage ', selector));
    this.element = element;
    const chartBox = h('div', { class: 'chart' });
    body.append(
      chartBox,
      h('p', { class: 'figures' }, 'relay samples ', this.windowLabel, ': ', h('strong', {}, this.samples)),
      h('div', { class: 'lag-tables' }, this.steady.element, this.catchUp.element),
    );
    this.chart = new TimeChart(chartBox, {
      series: [
        { label: 'p50', stroke: '#2f7ed8' },
        { label: 'p95', stroke: '#e8a33d' },
        { label: 'p99', stroke: '#d6453d' },
      ],
      format: formatMs,
    });
  }

  update(snapshot: PipelineSnapshot, history: SnapshotHistory): void {
    this.history = history;
    this.renderChart();
    const { lag } = snapshot;
    this.samples.textContent = String(stageRow(lag.steady, 'relay')?.count ?? 0);
    this.windowLabel.textContent = `(last ${lag.windowSeconds} s)`;
    if (this.tables.changed(lag)) {
      this.renderRows(this.steady.body, lag.steady, '');
      this.renderRows(this.catchUp.body, lag.catchUp, 'catchup-');
    }
  }

  private renderChart(): void {
    if (this.history === null) return;
    const stage = this.stage;
    this.chart.setData(
      this.history.columns(
        PERCENTILES.map((percentile) => (snapshot: PipelineSnapshot) => {
          const row = stageRow(snapshot.lag.steady, stage);
          return row === undefined || row.count === 0 ? null : row[percentile];
        }),
      ),
    );
  }

  private renderRows(body: HTMLTableSectionElement, rows: readonly StageLag[], prefix: string): void {
    body.replaceChildren(
      ...STAGES.map((stage) => {
        const row = stageRow(rows, stage);
        return h(
          'tr',
          { 'data-stage': stage },
          h('th', { scope: 'row' }, STAGE_LABELS[stage]),
          ...COLUMNS.map((column: Column) =>
            h(
              'td',
              { class: 'num', 'data-testid': `lag-${prefix}${stage}-${column}` },
              row === undefined ? '—' : column === 'count' ? formatInteger(row.count) : formatMs(row[column]),
            ),
          ),
        );
      }),
    );
  }
}
