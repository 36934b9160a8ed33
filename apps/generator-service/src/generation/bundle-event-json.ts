import type { NodeBundleRecord } from '@policygen/cache';

/**
 * A `node.bundle` event as JSON text, the file list's JSON (`filesJson`, made once when the node was
 * computed) put in as it is: the same text as `JSON.stringify` of the event object, member by member.
 */
export function bundleEventJson(
  record: Pick<NodeBundleRecord, 'nodeId' | 'revision' | 'committedAt' | 'hash' | 'manifestSha256'>,
  filesJson: string,
  generatedAt: string,
  catchUp: boolean,
): string {
  return (
    `{"schemaVersion":1,"type":"node.bundle","nodeId":${JSON.stringify(record.nodeId)},` +
    `"revision":${JSON.stringify(record.revision)},"committedAt":${JSON.stringify(record.committedAt)},` +
    `"generatedAt":${JSON.stringify(generatedAt)},${catchUp ? '"catchUp":true,' : ''}` +
    `"hash":${JSON.stringify(record.hash)},"files":${filesJson},` +
    `"manifestSha256":${JSON.stringify(record.manifestSha256)}}`
  );
}

/** Characters JSON.stringify may write other than as they are (quotes, escapes, controls, beyond ASCII). */
const NOT_PLAIN = /["\\\p{Cc}\u0080-\uffff]/u;

function jsonString(text: string): string {
  return NOT_PLAIN.test(text) ? JSON.stringify(text) : `"${text}"`;
}

/**
 * `JSON.stringify` of each file's `{ path, sha256 }` but the one at `leftOut`, built as text: the
 * same bytes without an object per file to encode (half the time, for a list made per node).
 */
export function filesJsonOf(
  files: readonly { readonly path: string; readonly sha256: string }[],
  leftOut: string,
): string {
  let json = '';
  for (const file of files) {
    if (file.path === leftOut) continue;
    json += `${json === '' ? '' : ','}{"path":${jsonString(file.path)},"sha256":${jsonString(file.sha256)}}`;
  }
  return `[${json}]`;
}
