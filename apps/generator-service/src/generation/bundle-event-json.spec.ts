import fc from 'fast-check';
import type { NodeBundleEvent } from '@policygen/events';
import { bundleEventJson, filesJsonOf } from './bundle-event-json';

describe('bundleEventJson', () => {
  it('is JSON.stringify of the event object, whatever the record holds', () => {
    const file = fc.record({ path: fc.string({ unit: 'binary' }), sha256: fc.string() });
    fc.assert(
      fc.property(
        fc.record({
          nodeId: fc.string({ unit: 'binary' }),
          revision: fc.nat(),
          committedAt: fc.string(),
          hash: fc.string(),
          files: fc.array(file, { maxLength: 5 }),
          manifestSha256: fc.string({ unit: 'binary' }),
        }),
        fc.string(),
        fc.boolean(),
        (record, generatedAt, catchUp) => {
          const event: NodeBundleEvent = {
            schemaVersion: 1,
            type: 'node.bundle',
            nodeId: record.nodeId,
            revision: record.revision,
            committedAt: record.committedAt,
            generatedAt,
            ...(catchUp ? { catchUp } : {}),
            hash: record.hash,
            files: record.files,
            manifestSha256: record.manifestSha256,
          };
          const json = bundleEventJson(record, JSON.stringify(record.files), generatedAt, catchUp);
          expect(json).toBe(JSON.stringify(event));
        },
      ),
    );
  });

  it('encodes a file list as JSON.stringify of each file but the one left out, whatever its paths and digests hold', () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.string({
        unit: fc.constantFrom('a', '/', '"', '\\', '\n', '\u0000', '\u007f', 'é', '\ud800', '\udfff'),
      }),
    );
    const file = fc.record({ path: text, sha256: text, bytes: fc.nat() });
    fc.assert(
      fc.property(fc.array(file, { maxLength: 6 }), text, (files, leftOut) => {
        const expected = JSON.stringify(
          files.filter((entry) => entry.path !== leftOut).map(({ path, sha256 }) => ({ path, sha256 })),
        );
        expect(filesJsonOf(files, leftOut)).toBe(expected);
      }),
    );
  });
});
