import type { PipelineSnapshot, RelayState } from '../api/contract';
import { emptyRow, h, panelFrame, table } from '../dom';
import { formatAgo, formatDateTime, formatInteger } from '../format';
import type { Panel } from './panel';

const COLUMNS = ['relay', 'rev.', 'behind', 'confirmed', 'nodes'];

/** The relays in tree order, each with its depth; a relay whose parent is unknown is a root. */
export function relayTree(relays: readonly RelayState[]): { relay: RelayState; depth: number }[] {
  const byId = new Map(relays.map((relay) => [relay.relayId, relay]));
  const children = new Map<string | null, RelayState[]>();
  for (const relay of relays) {
    const parent = relay.parentId !== null && byId.has(relay.parentId) ? relay.parentId : null;
    const siblings = children.get(parent) ?? [];
    siblings.push(relay);
    children.set(parent, siblings);
  }
  const ordered: { relay: RelayState; depth: number }[] = [];
  const seen = new Set<string>();
  const visit = (parent: string | null, depth: number): void => {
    const siblings = [...(children.get(parent) ?? [])].sort((a, b) => a.relayId.localeCompare(b.relayId));
    for (const relay of siblings) {
      if (seen.has(relay.relayId)) continue;
      seen.add(relay.relayId);
      ordered.push({ relay, depth });
      visit(relay.relayId, depth + 1);
    }
  };
  visit(null, 0);
  // Relays in a cycle have no root to be reached from: list them at the top level.
  for (const relay of relays) if (!seen.has(relay.relayId)) ordered.push({ relay, depth: 0 });
  return ordered;
}

/** The relay tree: where each relay is, how far behind, when it last confirmed. */
export class RelaysPanel implements Panel {
  readonly element: HTMLElement;
  private readonly rows = table('relays-table', COLUMNS);
  private readonly summary = h('span', { class: 'muted' });

  constructor() {
    const { element, body } = panelFrame('relays-panel', 'Relays', this.summary);
    this.element = element;
    body.append(h('div', { class: 'table-scroll' }, this.rows.element));
  }

  update(snapshot: PipelineSnapshot): void {
    const relays = snapshot.status.relays;
    const behind = relays.filter((relay) => relay.behind > 0).length;
    this.summary.textContent = relays.length === 0 ? '' : behind === 0 ? 'all in sync' : `${behind} behind`;
    // Rendered every time: "confirmed … ago" moves with the clock.
    this.rows.body.replaceChildren(
      ...(relays.length === 0
        ? [emptyRow(COLUMNS.length, 'no relay')]
        : relayTree(relays).map(({ relay, depth }) =>
            h(
              'tr',
              {
                class: relay.behind > 0 ? 'behind' : '',
                'data-testid': 'relay-row',
                'data-relay-id': relay.relayId,
                'data-behind': relay.behind,
              },
              h(
                'td',
                { class: 'mono tree', style: `padding-left: ${0.6 + depth * 1.25}em` },
                depth > 0 ? h('span', { class: 'branch' }, '└ ') : null,
                relay.relayId,
              ),
              h('td', { class: 'num' }, formatInteger(relay.revision)),
              h('td', { class: 'num' }, relay.behind > 0 ? formatInteger(relay.behind) : '0'),
              h('td', { title: formatDateTime(relay.confirmedAt) }, formatAgo(relay.confirmedAt)),
              h('td', { class: 'num' }, formatInteger(relay.nodes)),
            ),
          )),
    );
  }
}
