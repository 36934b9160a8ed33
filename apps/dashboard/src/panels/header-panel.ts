import type { PipelineSnapshot } from '../api/contract';
import type { ConnectionState } from '../api/snapshot-stream';
import { h } from '../dom';
import { formatAgo, formatInteger } from '../format';
import type { Panel } from './panel';

/** A snapshot older than this, on a connection said to be open, shows the stream as stalled. */
const STALE_AFTER_MS = 5_000;

/** The page's header: revisions per stage, readiness and whether the stream is live. */
export class HeaderPanel implements Panel {
  readonly element: HTMLElement;
  private readonly committed = h('strong', { 'data-testid': 'revision-committed' }, '—');
  private readonly generated = h('strong', { 'data-testid': 'revision-generated' }, '—');
  private readonly distributed = h('strong', { 'data-testid': 'revision-distributed' }, '—');
  private readonly generatedBehind = h('span', { class: 'behind-by' });
  private readonly distributedBehind = h('span', { class: 'behind-by' });
  private readonly readiness = h('div', {
    class: 'readiness',
    'data-testid': 'readiness',
    'data-ready': 'unknown',
  });
  private readonly live = h('span', {
    class: 'live-indicator',
    'data-testid': 'live-indicator',
    'data-state': 'connecting',
  });
  private readonly lastSnapshot = h('span', { class: 'last-snapshot', 'data-testid': 'last-snapshot' });
  private connection: ConnectionState = 'connecting';
  /** When the last snapshot arrived, by this browser's clock (the server's may differ). */
  private receivedAt: number | null = null;

  constructor() {
    this.element = h(
      'header',
      { class: 'page-header', 'data-testid': 'header' },
      h('div', { class: 'brand' }, h('h1', {}, 'Policygen'), h('span', { class: 'subtitle' }, 'pipeline')),
      h(
        'dl',
        { class: 'revisions' },
        h('div', {}, h('dt', {}, 'committed'), h('dd', {}, this.committed)),
        h('div', {}, h('dt', {}, 'generated'), h('dd', {}, this.generated, this.generatedBehind)),
        h('div', {}, h('dt', {}, 'distributed'), h('dd', {}, this.distributed, this.distributedBehind)),
      ),
      this.readiness,
      h('div', { class: 'connection' }, this.live, this.lastSnapshot),
    );
    this.renderConnection();
    window.setInterval(() => this.renderConnection(), 1_000);
  }

  update(snapshot: PipelineSnapshot): void {
    const { committed, generated, distributed } = snapshot.status.revisions;
    this.committed.textContent = formatInteger(committed);
    this.generated.textContent = formatInteger(generated);
    this.distributed.textContent = formatInteger(distributed);
    this.generatedBehind.textContent =
      committed > generated ? `−${formatInteger(committed - generated)}` : '';
    this.distributedBehind.textContent =
      generated > distributed ? `−${formatInteger(generated - distributed)}` : '';
    this.renderReadiness(snapshot.status.ready, snapshot.status.reasons);
    this.receivedAt = Date.now();
    this.renderConnection();
  }

  setConnection(state: ConnectionState): void {
    this.connection = state;
    this.renderConnection();
  }

  private renderReadiness(ready: boolean, reasons: readonly string[]): void {
    this.readiness.dataset['ready'] = String(ready);
    this.readiness.replaceChildren(
      h('span', { class: `badge ${ready ? 'ok' : 'bad'}` }, ready ? 'ready' : 'not ready'),
    );
    if (reasons.length > 0) {
      this.readiness.append(
        h(
          'ul',
          { class: 'reasons', 'data-testid': 'readiness-reasons' },
          ...reasons.map((reason) => h('li', {}, reason)),
        ),
      );
    }
  }

  private renderConnection(): void {
    const now = Date.now();
    const stale =
      this.connection === 'live' && this.receivedAt !== null && now - this.receivedAt > STALE_AFTER_MS;
    const state = stale ? 'stalled' : this.connection;
    const label = {
      live: 'live',
      connecting: 'connecting…',
      disconnected: 'disconnected',
      stalled: 'stalled',
    }[state];
    this.live.dataset['state'] = state;
    this.live.textContent = label;
    this.lastSnapshot.textContent =
      this.receivedAt === null
        ? ''
        : `last snapshot ${formatAgo(new Date(this.receivedAt).toISOString(), now)}`;
  }
}
