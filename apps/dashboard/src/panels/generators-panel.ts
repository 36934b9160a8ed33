import type { PipelineSnapshot } from '../api/contract';
import { emptyRow, h, panelFrame, table } from '../dom';
import { formatRanges } from '../format';
import type { Panel } from './panel';
import { ChangeGate } from './panel';

const COLUMNS = ['client', 'member', 'partitions'];

/** The generator-service instances in the consumer group and the partitions each one holds. */
export class GeneratorsPanel implements Panel {
  readonly element: HTMLElement;
  private readonly rows = table('generators-table', COLUMNS);
  private readonly summary = h('span', { class: 'muted' });
  private readonly gate = new ChangeGate();

  constructor() {
    const { element, body } = panelFrame('generators-panel', 'Generators', this.summary);
    this.element = element;
    body.append(h('div', { class: 'table-scroll' }, this.rows.element));
  }

  update(snapshot: PipelineSnapshot): void {
    const generators = snapshot.status.generators;
    if (!this.gate.changed(generators)) return;
    this.summary.textContent = generators.length === 1 ? '1 instance' : `${generators.length} instances`;
    const sorted = [...generators].sort(
      (a, b) => a.clientId.localeCompare(b.clientId) || a.memberId.localeCompare(b.memberId),
    );
    this.rows.body.replaceChildren(
      ...(sorted.length === 0
        ? [emptyRow(COLUMNS.length, 'no generator instance')]
        : sorted.map((generator) =>
            h(
              'tr',
              { 'data-testid': 'generator-row', 'data-member-id': generator.memberId },
              h('td', { class: 'mono' }, generator.clientId),
              h('td', { class: 'mono member', title: generator.memberId }, generator.memberId),
              h('td', { class: 'mono' }, formatRanges(generator.partitions)),
            ),
          )),
    );
  }
}
