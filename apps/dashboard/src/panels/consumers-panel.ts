import type { ConsumerLag, PipelineSnapshot } from '../api/contract';
import { emptyRow, h, panelFrame, table } from '../dom';
import { formatInteger } from '../format';
import type { Panel } from './panel';
import { ChangeGate } from './panel';

const COLUMNS = ['group / topic', 'lag'];

function keyOf(consumer: ConsumerLag): string {
  return `${consumer.group}\u0000${consumer.topic}`;
}

/** Kafka consumer lag per group and topic; a row expands to its partitions. */
export class ConsumersPanel implements Panel {
  readonly element: HTMLElement;
  private readonly rows = table('consumers-table', COLUMNS);
  private readonly expanded = new Set<string>();
  private readonly gate = new ChangeGate();
  private consumers: ConsumerLag[] = [];

  constructor() {
    const { element, body } = panelFrame('consumers-panel', 'Consumer lag');
    this.element = element;
    body.append(h('div', { class: 'table-scroll' }, this.rows.element));
    this.rows.body.addEventListener('click', (event) => {
      const row = (event.target as Element | null)?.closest<HTMLTableRowElement>('tr[data-key]');
      const key = row?.dataset['key'];
      if (key === undefined) return;
      if (this.expanded.has(key)) this.expanded.delete(key);
      else this.expanded.add(key);
      this.render();
    });
  }

  update(snapshot: PipelineSnapshot): void {
    if (!this.gate.changed(snapshot.status.consumers)) return;
    this.consumers = snapshot.status.consumers;
    this.render();
  }

  private render(): void {
    if (this.consumers.length === 0) {
      this.rows.body.replaceChildren(emptyRow(COLUMNS.length, 'no consumer group'));
      return;
    }
    const sorted = [...this.consumers].sort(
      (a, b) => a.group.localeCompare(b.group) || a.topic.localeCompare(b.topic),
    );
    this.rows.body.replaceChildren(
      ...sorted.flatMap((consumer) => {
        const key = keyOf(consumer);
        const open = this.expanded.has(key);
        const row = h(
          'tr',
          {
            class: `clickable${consumer.lag > 0 ? ' lagging' : ''}`,
            'data-testid': 'consumer-row',
            'data-key': key,
            'aria-expanded': String(open),
            title: 'show partitions',
          },
          h(
            'td',
            { class: 'mono' },
            h('span', { class: 'twisty' }, open ? '▾ ' : '▸ '),
            consumer.group,
            h('div', { class: 'topic' }, consumer.topic),
          ),
          h('td', { class: 'num' }, formatInteger(consumer.lag)),
        );
        if (!open) return [row];
        const partitions = [...consumer.partitions].sort((a, b) => a.partition - b.partition);
        return [
          row,
          ...partitions.map((partition) =>
            h(
              'tr',
              {
                class: `partition${partition.lag > 0 ? ' lagging' : ''}`,
                'data-testid': 'consumer-partition-row',
              },
              h('td', { class: 'mono' }, `partition ${partition.partition}`),
              h('td', { class: 'num' }, formatInteger(partition.lag)),
            ),
          ),
        ];
      }),
    );
  }
}
