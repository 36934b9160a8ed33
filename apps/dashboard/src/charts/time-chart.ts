import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface SeriesSpec {
  label: string;
  stroke: string;
  /** On a scale of its own, with its axis on the right (a series far smaller than the others). */
  rightAxis?: boolean;
}

export interface TimeChartOptions {
  series: readonly SeriesSpec[];
  /** How a value reads on the axis and in the legend. */
  format: (value: number) => string;
  height?: number;
}

/** A uPlot time-series chart that follows its container's width. */
export class TimeChart {
  private readonly plot: uPlot;
  private readonly resizeObserver: ResizeObserver;
  private readonly height: number;

  constructor(
    private readonly container: HTMLElement,
    options: TimeChartOptions,
  ) {
    this.height = options.height ?? 220;
    const format = options.format;
    const axisFont = '11px system-ui, sans-serif';
    const grid = { stroke: 'rgba(120, 130, 150, 0.18)', width: 1 };
    const empty: uPlot.AlignedData = [[], ...options.series.map(() => [])];
    const range: uPlot.Range.Function = (_u, min, max) => [0, Math.max(max, min, 1) * 1.1];
    const rightAxis = options.series.find((spec) => spec.rightAxis === true);
    this.plot = new uPlot(
      {
        width: this.width(),
        height: this.height,
        cursor: { drag: { x: false, y: false } },
        legend: { live: true },
        scales: { x: { time: true }, y: { range }, right: { range } },
        axes: [
          { font: axisFont, grid, stroke: '#5b6475' },
          {
            font: axisFont,
            grid,
            stroke: '#5b6475',
            size: 64,
            values: (_u, splits) => splits.map((value) => format(value)),
          },
          ...(rightAxis === undefined
            ? []
            : [
                {
                  scale: 'right',
                  side: 1,
                  font: axisFont,
                  grid: { show: false },
                  stroke: rightAxis.stroke,
                  size: 48,
                  values: (_u: uPlot, splits: number[]) => splits.map((value) => format(value)),
                },
              ]),
        ],
        series: [
          {
            label: 'time',
            value: (_u, value) =>
              value === null ? '—' : new Date(value * 1_000).toLocaleTimeString([], { hour12: false }),
          },
          ...options.series.map((spec) => ({
            label: spec.label,
            stroke: spec.stroke,
            scale: spec.rightAxis === true ? 'right' : 'y',
            width: 1.75,
            spanGaps: false,
            points: { show: false },
            value: (_u: uPlot, value: number | null) => (value === null ? '—' : format(value)),
          })),
        ],
      },
      empty,
      container,
    );
    this.resizeObserver = new ResizeObserver(() =>
      this.plot.setSize({ width: this.width(), height: this.height }),
    );
    this.resizeObserver.observe(container);
  }

  setData(data: [number[], ...(number | null)[][]]): void {
    this.plot.setData(data as uPlot.AlignedData);
  }

  destroy(): void {
    this.resizeObserver.disconnect();
    this.plot.destroy();
  }

  private width(): number {
    return Math.max(240, Math.floor(this.container.clientWidth));
  }
}
