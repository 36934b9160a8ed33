import './styles.css';
import { ApiClient } from './api/client';
import type { PipelineSnapshot } from './api/contract';
import { openSnapshotStream } from './api/snapshot-stream';
import { resolveToken } from './api/token';
import { h } from './dom';
import { SnapshotHistory } from './history';
import { ConsumersPanel } from './panels/consumers-panel';
import { FailuresPanel } from './panels/failures-panel';
import { GeneratorsPanel } from './panels/generators-panel';
import { HeaderPanel } from './panels/header-panel';
import { LagPanel } from './panels/lag-panel';
import { NodeDetailPanel } from './panels/node-detail-panel';
import type { Panel } from './panels/panel';
import { RelaysPanel } from './panels/relays-panel';
import { ThroughputPanel } from './panels/throughput-panel';

/** The charts keep this much history, in memory only. */
const HISTORY_SECONDS = 10 * 60;

function storage(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

function start(root: HTMLElement): void {
  const client = new ApiClient(resolveToken(window.location, window.history, storage()));
  const history = new SnapshotHistory(HISTORY_SECONDS);

  const header = new HeaderPanel();
  const lag = new LagPanel();
  const throughput = new ThroughputPanel();
  // The detail and the failure list each tell the other which node is open.
  let failures: FailuresPanel | null = null;
  const detail = new NodeDetailPanel(client, () => failures?.select(null));
  failures = new FailuresPanel(client, (nodeId) => detail.open(nodeId));
  const relays = new RelaysPanel();
  const consumers = new ConsumersPanel();
  const generators = new GeneratorsPanel();
  const panels: Panel[] = [header, lag, throughput, failures, relays, consumers, generators, detail];

  root.replaceChildren(
    header.element,
    h(
      'main',
      { class: 'grid' },
      h('div', { class: 'span-2' }, lag.element),
      throughput.element,
      h('div', { class: 'span-3' }, failures.element),
      relays.element,
      consumers.element,
      generators.element,
    ),
    detail.element,
  );

  let streamed = false;
  const apply = (snapshot: PipelineSnapshot, chart: boolean): void => {
    if (chart) history.add(snapshot);
    for (const panel of panels) {
      try {
        panel.update(snapshot, history);
      } catch (error) {
        // One panel's trouble with an unexpected snapshot must not stop the others.
        console.error('dashboard panel update failed', error);
      }
    }
  };

  openSnapshotStream(client, {
    snapshot: (snapshot) => {
      streamed = true;
      apply(snapshot, true);
    },
    state: (state) => header.setConnection(state),
  });

  // The first paint need not wait for the stream's first snapshot. It is not charted: its time
  // would be this browser's, and the charts' times are the server's.
  Promise.all([client.status(), client.lag(60)])
    .then(([status, lagReport]) => {
      if (!streamed) apply({ at: new Date().toISOString(), status, lag: lagReport }, false);
    })
    .catch((error: unknown) => console.warn('dashboard first paint: the status could not be read', error));
}

const root = document.getElementById('app');
if (root === null) throw new Error('the page has no #app element');
start(root);
