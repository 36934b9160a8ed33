import type { NodeBundleRecord } from '@policygen/cache';

/**
 * A `node.bundle` event as JSON text, the record's `filesJson` put in as it is: the same text as
 * `JSON.stringify` of the event object, member by member, but the file list — most of its bytes —
 * is encoded once for the event and the cache's record both.
 */
export function bundleEventJson(
  record: NodeBundleRecord & { readonly filesJson: string },
  generatedAt: string,
  catchUp: boolean,
): string {
  return (
    `{"schemaVersion":1,"type":"node.bundle","nodeId":${JSON.stringify(record.nodeId)},` +
    `"revision":${JSON.stringify(record.revision)},"committedAt":${JSON.stringify(record.committedAt)},` +
    `"generatedAt":${JSON.stringify(generatedAt)},${catchUp ? '"catchUp":true,' : ''}` +
    `"hash":${JSON.stringify(record.hash)},"files":${record.filesJson},` +
    `"manifestSha256":${JSON.stringify(record.manifestSha256)}}`
  );
}
