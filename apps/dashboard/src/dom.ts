type AttributeValue = string | number | boolean | null | undefined;
type Child = Node | string | number | null | undefined | false;

/**
 * Creates an element: attributes by name (`class`, `data-testid`, ...; `true` sets an empty
 * attribute, `false`/`null`/`undefined` leaves it out) and children (strings become text).
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, AttributeValue> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false || value === null || value === undefined) continue;
    element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

/** A panel's frame: a titled card with the given test id, its body and optional header controls. */
export function panelFrame(
  testId: string,
  title: string,
  ...controls: Child[]
): { element: HTMLElement; body: HTMLElement } {
  const body = h('div', { class: 'panel-body' });
  const element = h(
    'section',
    { class: `panel ${testId}`, 'data-testid': testId },
    h(
      'header',
      { class: 'panel-header' },
      h('h2', {}, title),
      h('div', { class: 'panel-controls' }, ...controls),
    ),
    body,
  );
  return { element, body };
}

/** A table with the given column headings; returns the table and its body. */
export function table(
  className: string,
  headings: readonly string[],
): { element: HTMLTableElement; body: HTMLTableSectionElement } {
  const body = h('tbody');
  const element = h(
    'table',
    { class: `data-table ${className}` },
    h('thead', {}, h('tr', {}, ...headings.map((heading) => h('th', { scope: 'col' }, heading)))),
    body,
  );
  return { element, body };
}

/** A row spanning the table, saying there is nothing to show. */
export function emptyRow(columns: number, text: string): HTMLTableRowElement {
  return h('tr', { class: 'empty' }, h('td', { colspan: columns }, text));
}
