import type { ApiClient } from '../api/client';
import type { Failure, FailureFilter, FailurePage, PipelineSnapshot } from '../api/contract';
import { emptyRow, h, panelFrame, table } from '../dom';
import { DASH, formatDateTime, formatInteger, truncate } from '../format';
import type { Panel } from './panel';
import { ChangeGate } from './panel';

/** The list is fetched again at least this often, and whenever the failing count changes. */
const REFRESH_MS = 5_000;
const FILTER_DEBOUNCE_MS = 300;
const PAGE_SIZE = 50;
const MESSAGE_LENGTH = 140;
const COLUMNS = ['node', 'code', 'directives', 'rules', 'since rev.', 'message'];

/** The failing nodes, filtered by code, directive or rule; a row opens the node's detail. */
export class FailuresPanel implements Panel {
  readonly element: HTMLElement;
  private readonly filterInputs: Record<keyof FailureFilter, HTMLInputElement>;
  private readonly summary = h('div', { class: 'failure-summary' });
  private readonly codes = h('div', { class: 'code-chips', 'data-testid': 'failure-codes' });
  private readonly rows = table('failures-table', COLUMNS);
  private readonly footer = h('p', { class: 'muted table-footer', 'data-testid': 'failures-footer' });
  private readonly error = h('p', { class: 'error', hidden: true });
  private readonly counts = new ChangeGate();
  private selected: string | null = null;
  private items: Failure[] = [];
  private inFlight: AbortController | null = null;
  /** Asked to refresh while a request was under way: refresh again when it ends. */
  private again = false;
  private lastFetch = 0;
  private debounce: number | undefined;

  constructor(
    private readonly client: ApiClient,
    private readonly onSelect: (nodeId: string) => void,
  ) {
    const input = (name: keyof FailureFilter, placeholder: string): HTMLInputElement => {
      const element = h('input', {
        type: 'search',
        placeholder,
        'aria-label': `filter by ${name}`,
        'data-testid': `failure-filter-${name}`,
        spellcheck: 'false',
      });
      element.addEventListener('input', () => this.filterChanged());
      return element;
    };
    this.filterInputs = {
      code: input('code', 'code'),
      directive: input('directive', 'directive id'),
      rule: input('rule', 'rule id'),
    };
    const { element, body } = panelFrame(
      'failures-panel',
      'Failing nodes',
      h(
        'div',
        { class: 'filters' },
        this.filterInputs.code,
        this.filterInputs.directive,
        this.filterInputs.rule,
      ),
    );
    this.element = element;
    body.append(
      h('div', { class: 'failure-head' }, this.summary, this.codes),
      this.error,
      h('div', { class: 'table-scroll' }, this.rows.element),
      this.footer,
    );
    this.rows.body.append(emptyRow(COLUMNS.length, 'loading…'));
    this.rows.body.addEventListener('click', (event) => this.rowActivated(event));
    this.rows.body.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        this.rowActivated(event);
      }
    });
    window.setInterval(() => {
      if (Date.now() - this.lastFetch >= REFRESH_MS) this.refresh();
    }, 1_000);
    this.refresh();
  }

  update(snapshot: PipelineSnapshot): void {
    const { failingNodes, failuresByCode } = snapshot.status;
    this.summary.replaceChildren(
      h('strong', { 'data-testid': 'failing-nodes' }, formatInteger(failingNodes)),
      failingNodes === 1 ? ' failing node' : ' failing nodes',
    );
    if (this.counts.changed({ failingNodes, failuresByCode })) {
      this.renderCodes(failuresByCode);
      this.refresh();
    }
  }

  /** Marks the node whose detail is open (null: none). */
  select(nodeId: string | null): void {
    this.selected = nodeId;
    for (const row of this.rows.body.querySelectorAll<HTMLTableRowElement>('tr[data-node-id]')) {
      row.classList.toggle('selected', row.dataset['nodeId'] === nodeId);
    }
  }

  private filter(): FailureFilter {
    return {
      code: this.filterInputs.code.value.trim(),
      directive: this.filterInputs.directive.value.trim(),
      rule: this.filterInputs.rule.value.trim(),
    };
  }

  private filterChanged(): void {
    window.clearTimeout(this.debounce);
    this.debounce = window.setTimeout(() => {
      this.inFlight?.abort();
      this.inFlight = null;
      this.refresh();
    }, FILTER_DEBOUNCE_MS);
  }

  private refresh(): void {
    if (this.inFlight !== null) {
      this.again = true;
      return;
    }
    this.again = false;
    const abort = new AbortController();
    this.inFlight = abort;
    this.lastFetch = Date.now();
    this.client
      .failures(this.filter(), PAGE_SIZE, abort.signal)
      .then((page) => {
        this.error.hidden = true;
        this.render(page);
      })
      .catch((error: unknown) => {
        if (abort.signal.aborted) return;
        this.error.hidden = false;
        this.error.textContent = `Could not load the failures: ${error instanceof Error ? error.message : String(error)}`;
      })
      .finally(() => {
        if (this.inFlight !== abort) return;
        this.inFlight = null;
        if (this.again) this.refresh();
      });
  }

  private renderCodes(byCode: Record<string, number>): void {
    const entries = Object.entries(byCode).sort(([a, m], [b, n]) => n - m || a.localeCompare(b));
    this.codes.replaceChildren(
      ...entries.map(([code, count]) => {
        const chip = h(
          'button',
          { type: 'button', class: 'chip', title: `show only ${code}`, 'data-code': code },
          h('span', { class: 'code' }, code),
          h('span', { class: 'count' }, formatInteger(count)),
        );
        chip.addEventListener('click', () => {
          const input = this.filterInputs.code;
          input.value = input.value === code ? '' : code;
          this.filterChanged();
        });
        return chip;
      }),
    );
  }

  private render(page: FailurePage): void {
    this.items = page.items;
    if (page.items.length === 0) {
      const filtered = Object.values(this.filter()).some((value) => value !== '');
      this.rows.body.replaceChildren(
        emptyRow(COLUMNS.length, filtered ? 'no failing node matches' : 'no failing node'),
      );
    } else {
      this.rows.body.replaceChildren(...page.items.map((failure) => this.row(failure)));
    }
    this.footer.textContent =
      page.total > page.items.length
        ? `showing ${formatInteger(page.items.length)} of ${formatInteger(page.total)}`
        : page.total > 0
          ? `${formatInteger(page.total)} in all`
          : '';
  }

  private row(failure: Failure): HTMLTableRowElement {
    const ids = (values: readonly string[]): string => (values.length === 0 ? DASH : values.join(', '));
    return h(
      'tr',
      {
        class: `clickable${failure.nodeId === this.selected ? ' selected' : ''}`,
        tabindex: 0,
        'data-testid': 'failure-row',
        'data-node-id': failure.nodeId,
        'data-code': failure.code,
      },
      h('td', { class: 'mono' }, failure.nodeId),
      h('td', {}, h('span', { class: 'code-tag' }, failure.code)),
      h('td', { class: 'mono ids' }, ids(failure.directiveIds)),
      h('td', { class: 'mono ids' }, ids(failure.ruleIds)),
      h(
        'td',
        { class: 'num', title: `since ${formatDateTime(failure.since)}` },
        formatInteger(failure.sinceRevision),
      ),
      h('td', { class: 'message', title: failure.message }, truncate(failure.message, MESSAGE_LENGTH)),
    );
  }

  private rowActivated(event: Event): void {
    const row = (event.target as Element | null)?.closest<HTMLTableRowElement>('tr[data-node-id]');
    const nodeId = row?.dataset['nodeId'];
    if (nodeId === undefined || !this.items.some((item) => item.nodeId === nodeId)) return;
    this.select(nodeId);
    this.onSelect(nodeId);
  }
}
