import type { PipelineSnapshot } from '../api/contract';
import { TimeChart } from '../charts/time-chart';
import { h, panelFrame } from '../dom';
import { formatRate } from '../format';
import type { SnapshotHistory } from '../history';
import type { Panel } from './panel';

type Throughput = PipelineSnapshot['status']['throughput'];

const SERIES: readonly {
  key: keyof Throughput;
  label: string;
  stroke: string;
  testId: string;
  rightAxis?: boolean;
}[] = [
  // Changes come by the tens a second, nodes and bundles by the thousands: changes have the right axis.
  {
    key: 'changesPerSecond',
    label: 'changes/s',
    stroke: '#7a5af8',
    testId: 'throughput-changes',
    rightAxis: true,
  },
  {
    key: 'nodesGeneratedPerSecond',
    label: 'nodes generated/s',
    stroke: '#2f7ed8',
    testId: 'throughput-generated',
  },
  {
    key: 'bundlesDeliveredPerSecond',
    label: 'bundles delivered/s',
    stroke: '#1f9d6b',
    testId: 'throughput-delivered',
  },
];

/** Changes committed, nodes generated and bundles delivered per second, over time and now. */
export class ThroughputPanel implements Panel {
  readonly element: HTMLElement;
  private readonly chart: TimeChart;
  private readonly figures = SERIES.map((series) => h('strong', { 'data-testid': series.testId }, '—'));

  constructor() {
    const { element, body } = panelFrame('throughput-panel', 'Throughput');
    this.element = element;
    const chartBox = h('div', { class: 'chart' });
    body.append(
      chartBox,
      h(
        'dl',
        { class: 'figures-grid' },
        ...SERIES.map((series, index) =>
          h(
            'div',
            {},
            h('dt', {}, h('span', { class: 'swatch', style: `background:${series.stroke}` }), series.label),
            h('dd', {}, this.figures[index] ?? null),
          ),
        ),
      ),
    );
    this.chart = new TimeChart(chartBox, {
      series: SERIES.map(({ label, stroke, rightAxis }) => ({
        label,
        stroke,
        rightAxis: rightAxis === true,
      })),
      format: (value) => formatRate(value).replace('/s', ''),
    });
  }

  update(snapshot: PipelineSnapshot, history: SnapshotHistory): void {
    this.chart.setData(
      history.columns(
        SERIES.map(
          ({ key }) =>
            (s: PipelineSnapshot) =>
              s.status.throughput[key],
        ),
      ),
    );
    SERIES.forEach((series, index) => {
      const figure = this.figures[index];
      if (figure) figure.textContent = formatRate(snapshot.status.throughput[series.key]);
    });
  }
}
