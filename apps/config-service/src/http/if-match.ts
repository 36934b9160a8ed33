/** The entity tag of a revision: every response about the configuration carries it as `ETag`. */
export function etagOf(revision: number): string {
  return `"${revision}"`;
}

/**
 * Whether an `If-Match` header lets a change apply to what is at `revision`; `undefined` when it
 * does not exist, which no tag matches, not even `*` (RFC 9110). Absent or empty: yes. Tags may be
 * quoted or not, weak or strong, listed with commas, or `*`.
 */
export function ifMatchAccepts(header: string | undefined, revision: number | undefined): boolean {
  if (header === undefined || header.trim() === '') return true;
  if (revision === undefined) return false;
  return header
    .split(',')
    .map((tag) => tag.trim())
    .some((tag) => tag === '*' || tagValue(tag) === String(revision));
}

function tagValue(tag: string): string {
  const strong = tag.startsWith('W/') ? tag.slice(2) : tag;
  return strong.length >= 2 && strong.startsWith('"') && strong.endsWith('"') ? strong.slice(1, -1) : strong;
}
