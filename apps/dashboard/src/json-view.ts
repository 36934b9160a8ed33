import { h } from './dom';

/** Objects and arrays this deep or deeper start collapsed. */
const OPEN_DEPTH = 2;

/** A collapsible tree of a JSON value (objects and arrays fold), with the raw text below it. */
export function jsonView(value: unknown): HTMLElement {
  return h(
    'div',
    { class: 'json-view' },
    h('div', { class: 'json-tree' }, jsonNode(value, 0)),
    h(
      'details',
      { class: 'json-raw' },
      h('summary', {}, 'raw JSON'),
      h('pre', {}, JSON.stringify(value, null, 2)),
    ),
  );
}

function jsonNode(value: unknown, depth: number, key?: string): HTMLElement {
  const label = key === undefined ? null : h('span', { class: 'json-key' }, `${key}: `);
  if (value === null || typeof value !== 'object') {
    const kind = value === null ? 'null' : typeof value;
    return h(
      'div',
      { class: 'json-leaf' },
      label,
      h('span', { class: `json-${kind}` }, JSON.stringify(value) ?? String(value)),
    );
  }
  const entries: [string, unknown][] = Array.isArray(value)
    ? value.map((item, index) => [String(index), item])
    : Object.entries(value as Record<string, unknown>);
  const shape = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
  if (entries.length === 0) {
    return h(
      'div',
      { class: 'json-leaf' },
      label,
      h('span', { class: 'json-empty' }, Array.isArray(value) ? '[]' : '{}'),
    );
  }
  return h(
    'details',
    { class: 'json-branch', open: depth < OPEN_DEPTH },
    h('summary', {}, label, h('span', { class: 'json-shape' }, shape)),
    h(
      'div',
      { class: 'json-children' },
      ...entries.map(([childKey, child]) => jsonNode(child, depth + 1, childKey)),
    ),
  );
}
