import { createHash } from 'node:crypto';
import fc from 'fast-check';
import type { PolicyManifest } from '@policygen/engine';
import {
  GENERATED_AT_FILE,
  MANIFEST_FILE,
  compareCodeUnits,
  manifestParts,
  manifestText,
} from '@policygen/engine';
import { MANIFEST_HEAD_PATH, MANIFEST_PROPERTIES_PATH } from '@policygen/sdk';
import { DerivationError, blobFiles, deriveFile, derivesFiles, treeFiles } from './derived-files';
import type { FeedBundle, FeedFile } from './feed';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const text = fc.string({ unit: 'binary', maxLength: 12 });
const digest = fc.stringMatching(/^[0-9a-f]{64}$/);

/** A node's bundle as the engine makes it, and as the generator publishes it: files and parts. */
const published = fc
  .record({
    nodeId: fc.string({ minLength: 1, maxLength: 12 }),
    revision: fc.nat(),
    generatedAt: fc.integer({ min: 0, max: 4_102_444_800_000 }),
    errors: fc.array(fc.record({ code: fc.constant('MISSING_PARAMETER' as const), message: text }), {
      maxLength: 2,
    }),
    policies: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
    properties: fc.dictionary(text, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
    files: fc.uniqueArray(fc.record({ path: fc.stringMatching(/^rules\/[a-z]{1,6}\.cf$/), sha256: digest }), {
      selector: (file) => file.path,
      maxLength: 6,
    }),
    hash: digest.map((hex) => `sha256:${hex}`),
  })
  .map(({ nodeId, revision, generatedAt, errors, policies, properties, files, hash }) => {
    const stamp = `${generatedAt}\n`;
    const tree = [...files, { path: GENERATED_AT_FILE, sha256: sha256(stamp) }].sort((a, b) =>
      compareCodeUnits(a.path, b.path),
    );
    const manifest = {
      schemaVersion: 1,
      nodeId,
      configRevision: revision,
      status: 'ok',
      errors,
      ordering: 'alphanumeric',
      policies,
      properties,
      files: tree,
      hash,
    } as unknown as PolicyManifest;
    const parts = manifestParts(manifest);
    const blobs = new Map([
      [sha256(parts.head), parts.head],
      [sha256(parts.properties), parts.properties],
    ]);
    const bundle: FeedBundle = {
      hash,
      revision,
      committedAt: new Date(0).toISOString(),
      generatedAt: new Date(generatedAt).toISOString(),
      distributedAt: new Date(0).toISOString(),
      files: [
        { path: MANIFEST_HEAD_PATH, sha256: sha256(parts.head) },
        { path: MANIFEST_PROPERTIES_PATH, sha256: sha256(parts.properties) },
        { path: MANIFEST_FILE, sha256: sha256(manifestText(manifest)) },
        ...tree,
      ].sort((a, b) => compareCodeUnits(a.path, b.path)),
    };
    return { nodeId, bundle, manifest: manifestText(manifest), stamp, blobs };
  });

const fileAt = (bundle: FeedBundle, path: string): FeedFile =>
  bundle.files.find((file) => file.path === path) as FeedFile;

describe('files derived where a node is served', () => {
  it('puts together the manifest and the generation time the engine wrote, byte for byte', async () => {
    await fc.assert(
      fc.asyncProperty(published, async ({ nodeId, bundle, manifest, stamp, blobs }) => {
        const read = async (sha: string): Promise<Buffer> => {
          const content = blobs.get(sha);
          if (content === undefined) throw Object.assign(new Error(`no blob ${sha}`), { code: 'ENOENT' });
          return Buffer.from(content);
        };
        expect(derivesFiles(bundle)).toBe(true);
        const derived = await deriveFile(nodeId, bundle, fileAt(bundle, MANIFEST_FILE), read);
        expect(derived.toString()).toBe(manifest);
        expect((await deriveFile(nodeId, bundle, fileAt(bundle, GENERATED_AT_FILE), read)).toString()).toBe(
          stamp,
        );
        // The node's tree is every file but the parts; what is kept as blobs, every file but the derived.
        expect(treeFiles(bundle).map((file) => file.path)).toEqual(
          bundle.files.map((file) => file.path).filter((path) => !path.startsWith('.policygen/')),
        );
        expect(blobFiles(bundle).map((file) => file.path)).toEqual(
          bundle.files
            .map((file) => file.path)
            .filter((path) => path !== MANIFEST_FILE && path !== GENERATED_AT_FILE),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('refuses what does not have the digest the entry names', async () => {
    await fc.assert(
      fc.asyncProperty(published, async ({ nodeId, bundle, blobs }) => {
        const wrongRevision = { ...bundle, revision: bundle.revision + 1 };
        const read = async (sha: string): Promise<Buffer> => Buffer.from(blobs.get(sha) ?? '');
        await expect(deriveFile(nodeId, wrongRevision, fileAt(bundle, MANIFEST_FILE), read)).rejects.toThrow(
          DerivationError,
        );
        const otherTime = {
          ...bundle,
          generatedAt: new Date(Date.parse(bundle.generatedAt) + 1).toISOString(),
        };
        await expect(deriveFile(nodeId, otherTime, fileAt(bundle, GENERATED_AT_FILE), read)).rejects.toThrow(
          DerivationError,
        );
      }),
      { numRuns: 50 },
    );
  });

  it('leaves a bundle without parts as it is: every file a blob, every file served', () => {
    const files = [
      { path: MANIFEST_FILE, sha256: 'a'.repeat(64) },
      { path: GENERATED_AT_FILE, sha256: 'b'.repeat(64) },
      { path: 'rules/cfengine-community/promises.cf', sha256: 'c'.repeat(64) },
    ];
    expect(derivesFiles({ files })).toBe(false);
    expect(blobFiles({ files })).toEqual(files);
    expect(treeFiles({ files })).toEqual(files);
    // One part alone does not make a manifest.
    const half = [{ path: MANIFEST_HEAD_PATH, sha256: 'd'.repeat(64) }, ...files];
    expect(derivesFiles({ files: half })).toBe(false);
  });
});
