import type { ApiClient } from '../api/client';
import type { NodeStatus, PipelineSnapshot } from '../api/contract';
import { emptyRow, h, table } from '../dom';
import { DASH, formatAgo, formatDateTime, formatInteger } from '../format';
import { jsonView } from '../json-view';
import type { Panel } from './panel';
import { ChangeGate } from './panel';

/** The node's status is fetched again when the pipeline's revisions move, at most this often. */
const STATUS_REFRESH_MS = 2_000;

function shortHash(hash: string | null | undefined): string {
  return hash ? hash.slice(0, 12) : DASH;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A side panel: one node's status (generation, failure, relays, fetch) and its explain. */
export class NodeDetailPanel implements Panel {
  readonly element: HTMLElement;
  private readonly title = h('h2', { 'data-testid': 'node-detail-id' });
  private readonly status = h('div', { class: 'node-status', 'data-testid': 'node-status' });
  private readonly explain = h('div', { class: 'node-explain', 'data-testid': 'node-explain' });
  private readonly revisions = new ChangeGate();
  private nodeId: string | null = null;
  private statusLoadedAt = 0;
  /** Counts the loads, so an answer for a node no longer shown is dropped. */
  private loads = 0;

  constructor(
    private readonly client: ApiClient,
    private readonly onClose: () => void,
  ) {
    const close = h(
      'button',
      { type: 'button', class: 'close', 'aria-label': 'close', 'data-testid': 'node-detail-close' },
      '×',
    );
    close.addEventListener('click', () => this.close());
    const reloadExplain = h('button', { type: 'button', class: 'link' }, 'reload');
    reloadExplain.addEventListener('click', () => this.loadExplain());
    this.element = h(
      'aside',
      { class: 'node-detail', 'data-testid': 'node-detail', hidden: true, 'aria-label': 'node detail' },
      h('header', { class: 'panel-header' }, this.title, close),
      h('section', {}, h('h3', {}, 'Status'), this.status),
      h('section', {}, h('h3', {}, 'Explain ', reloadExplain), this.explain),
    );
    document.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && this.nodeId !== null) this.close();
    });
  }

  open(nodeId: string): void {
    this.nodeId = nodeId;
    this.element.hidden = false;
    this.element.dataset['nodeId'] = nodeId;
    this.title.textContent = nodeId;
    this.status.replaceChildren(h('p', { class: 'muted' }, 'loading…'));
    this.explain.replaceChildren(h('p', { class: 'muted' }, 'loading…'));
    this.loads += 1;
    this.loadStatus();
    this.loadExplain();
  }

  close(): void {
    this.nodeId = null;
    this.loads += 1;
    this.element.hidden = true;
    delete this.element.dataset['nodeId'];
    this.onClose();
  }

  update(snapshot: PipelineSnapshot): void {
    const moved = this.revisions.changed(snapshot.status.revisions);
    if (this.nodeId !== null && moved && Date.now() - this.statusLoadedAt >= STATUS_REFRESH_MS)
      this.loadStatus();
  }

  private loadStatus(): void {
    const nodeId = this.nodeId;
    if (nodeId === null) return;
    const load = this.loads;
    this.statusLoadedAt = Date.now();
    this.client
      .nodeStatus(nodeId)
      .then((status) => {
        if (load === this.loads) this.status.replaceChildren(...this.renderStatus(status));
      })
      .catch((error: unknown) => {
        if (load === this.loads) this.status.replaceChildren(h('p', { class: 'error' }, describe(error)));
      });
  }

  private loadExplain(): void {
    const nodeId = this.nodeId;
    if (nodeId === null) return;
    const load = this.loads;
    this.client
      .explain(nodeId)
      .then((explain) => {
        if (load === this.loads) this.explain.replaceChildren(jsonView(explain));
      })
      .catch((error: unknown) => {
        if (load === this.loads) this.explain.replaceChildren(h('p', { class: 'error' }, describe(error)));
      });
  }

  private renderStatus(status: NodeStatus): HTMLElement[] {
    const field = (label: string, ...value: (Node | string)[]): HTMLElement =>
      h('div', {}, h('dt', {}, label), h('dd', {}, ...value));
    const generation = status.generation;
    const failure = status.failure;
    const relays = table('node-relays', ['relay', 'revision', 'hash', 'confirmed']);
    relays.body.append(
      ...(status.relays.length === 0
        ? [emptyRow(4, 'on no relay yet')]
        : status.relays.map((relay) =>
            h(
              'tr',
              {},
              h('td', { class: 'mono' }, relay.relayId),
              h('td', { class: 'num' }, formatInteger(relay.revision)),
              h('td', { class: 'mono', title: relay.hash }, shortHash(relay.hash)),
              h('td', { title: formatDateTime(relay.confirmedAt) }, formatAgo(relay.confirmedAt)),
            ),
          )),
    );
    return [
      h(
        'dl',
        { class: 'facts' },
        field('config revision', formatInteger(status.revision)),
        field(
          'generation',
          generation === null
            ? 'not generated yet'
            : h(
                'span',
                {},
                h(
                  'span',
                  { class: `outcome ${generation.outcome}`, 'data-testid': 'node-outcome' },
                  generation.outcome,
                ),
                ` at revision ${formatInteger(generation.revision)}, ${formatAgo(generation.at)}`,
              ),
        ),
        generation === null
          ? null
          : field(
              'bundle hash',
              h('span', { class: 'mono', title: generation.hash ?? '' }, shortHash(generation.hash)),
            ),
        generation === null ? null : field('last good revision', formatInteger(generation.lastGoodRevision)),
        field(
          'fetched by node',
          status.fetched === null
            ? 'not yet'
            : `revision ${formatInteger(status.fetched.revision)} from ${status.fetched.relayId}, ${formatAgo(status.fetched.fetchedAt)}`,
        ),
      ),
      failure === null
        ? h('p', { class: 'ok-note' }, 'No failure.')
        : h(
            'div',
            { class: 'failure-box', 'data-testid': 'node-failure' },
            h(
              'p',
              {},
              h('span', { class: 'code-tag' }, failure.code),
              ` since revision ${formatInteger(failure.sinceRevision)} (${formatDateTime(failure.since)})`,
            ),
            h('pre', { class: 'message' }, failure.message),
            h(
              'dl',
              { class: 'facts' },
              field('directives', failure.directiveIds.join(', ') || DASH),
              field('rules', failure.ruleIds.join(', ') || DASH),
            ),
          ),
      h('h4', {}, 'On relays'),
      relays.element,
    ];
  }
}
