import { createHash } from 'node:crypto';
import type { FormedPolicy } from '../merge/policies';
import type { OrderingMode } from '../model/fleet';
import type { JsonObject } from '../model/json';
import type { PolicyEdge } from '../ordering/order';
import {
  followingPolicies,
  GENERATED_AT_FILE,
  policyBundleName,
  renderNodeFiles,
} from '../render/node-files';
import type { CompiledFleet } from '../index/fleet-index';
import type { DirectiveMode, NodeModeBasis } from '../policy-mode/policy-mode';
import { directiveMode, policyModeOf } from '../policy-mode/policy-mode';
import type { NodeComputation } from './compute-node';
import { computeNode } from './compute-node';
import type {
  BundleFile,
  FileDigest,
  GenerateOptions,
  ManifestPolicy,
  NodeBundle,
  NodeError,
  PolicyManifest,
} from './types';
import { mapList } from '../model/lists';

export const MANIFEST_FILE = 'policy-manifest.json';
export { GENERATED_AT_FILE };

/**
 * `policy-manifest.json` as written: one line of JSON. It is made for every bundle that changes,
 * so it is not laid out for reading (`jq .` does that); a reader parses it either way.
 */
export function manifestText(manifest: PolicyManifest): string {
  return manifestFromParts(manifest, manifestParts(manifest));
}

/**
 * A manifest's two large members as JSON text: what many nodes share (`head`: status, errors,
 * ordering and policies, the members between `configRevision` and `properties`) and the merged
 * properties. The pipeline moves these, content-addressed, instead of a manifest per node: the
 * manifest itself is the same bytes put together again where it is served (`manifestFromParts`).
 */
export interface ManifestParts {
  readonly head: string;
  readonly properties: string;
}

export function manifestParts(manifest: PolicyManifest): ManifestParts {
  const head = JSON.stringify({
    status: manifest.status,
    errors: manifest.errors,
    ordering: manifest.ordering,
    policies: manifest.policies,
  });
  return { head: head.slice(1, -1), properties: JSON.stringify(manifest.properties) };
}

/** `JSON.stringify` of the whole manifest and a newline, member by member, in its key order. */
export function manifestFromParts(
  manifest: Pick<PolicyManifest, 'nodeId' | 'configRevision' | 'files' | 'hash'>,
  parts: ManifestParts,
): string {
  // Each file is `{ path, sha256 }` and nothing else, as the engine and the feed hold them.
  const files = JSON.stringify(manifest.files);
  return (
    `{"schemaVersion":1,"nodeId":${JSON.stringify(manifest.nodeId)},"configRevision":${JSON.stringify(manifest.configRevision)},` +
    `${parts.head},"properties":${parts.properties},"files":${files},"hash":${JSON.stringify(manifest.hash)}}\n`
  );
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export function bundleFile(path: string, content: string): BundleFile {
  return { path, content, sha256: sha256(content), bytes: Buffer.byteLength(content, 'utf8') };
}

const byPath = (a: { path: string }, b: { path: string }): number =>
  a.path < b.path ? -1 : a.path > b.path ? 1 : 0;

/** `sha256:<hex>` over every file's path and digest, sorted by path, but the generation timestamp. */
export function bundleHash(files: readonly FileDigest[]): string {
  const sorted = files.filter((file) => file.path !== GENERATED_AT_FILE).sort(byPath);
  let text = '';
  for (const file of sorted) text += `${file.path}\u0000${file.sha256}\n`;
  return `sha256:${sha256(text)}`;
}

/**
 * Generates one node's bundle the direct way: every step from scratch, nothing cached. It is the
 * reference the incremental engine is tested against, and what `explain` shows.
 */
export function generateNode(
  compiled: CompiledFleet,
  nodeId: string,
  options: GenerateOptions = {},
): NodeBundle {
  if (!compiled.nodes.has(nodeId)) throw new Error(`unknown node ${nodeId}`);
  try {
    return bundleOf(computeNode(compiled, nodeId, options), options, compiled.settings.maxBundleBytes);
  } catch (error) {
    return failedBundle(nodeId, generationError(error), compiled.settings.ordering, options);
  }
}

/** What a node whose generation threw fails with (semantics.md §6: it keeps its last good tree). */
export function generationError(error: unknown): NodeError {
  const message = error instanceof Error ? error.message : String(error);
  return { code: 'GENERATION_ERROR', message: `generating the node failed: ${message}` };
}

/** A failed node's bundle: its manifest alone, saying why. */
export function failedBundle(
  nodeId: string,
  error: NodeError,
  ordering: OrderingMode,
  options: GenerateOptions,
): NodeBundle {
  return assembleBundle(
    { nodeId, status: 'failed', errors: [error], ordering, policies: [], properties: {}, files: [] },
    options,
  );
}

export function bundleOf(
  computation: NodeComputation,
  options: GenerateOptions,
  maxBundleBytes: number,
): NodeBundle {
  const nodeId = computation.node.id;
  if (computation.status === 'ignored') return ignoredBundle(nodeId);
  const rendered =
    computation.status === 'ok'
      ? renderNodeFiles(computation, options.generatedAt ?? 0)
      : new Map<string, string>();
  const files = mapList([...rendered], ([path, content]) => bundleFile(path, content));
  const tooLarge = bundleSizeError(
    files.filter((file) => file.path !== GENERATED_AT_FILE),
    maxBundleBytes,
  );
  return assembleBundle(
    {
      nodeId,
      status: tooLarge ? 'failed' : computation.status,
      errors: tooLarge ? [tooLarge] : computation.errors,
      ordering: computation.ordering.mode,
      policies: manifestPolicies(computation.policies, computation.edges, computation.modeBasis),
      properties: computation.inherited.properties,
      files: tooLarge ? [] : files,
    },
    options,
  );
}

/**
 * The node's failure when its files (those the bundle hash covers: all but the manifest and the
 * generation time) add up to more than `maxBundleBytes`; null otherwise.
 */
export function bundleSizeError(files: readonly FileDigest[], maxBundleBytes: number): NodeError | null {
  let bytes = 0;
  for (const file of files) bytes += file.bytes;
  return bytes > maxBundleBytes
    ? {
        code: 'BUNDLE_TOO_LARGE',
        message: `the node's files add up to ${bytes} bytes, more than settings.maxBundleBytes (${maxBundleBytes})`,
      }
    : null;
}

export function ignoredBundle(nodeId: string): NodeBundle {
  return { nodeId, status: 'ignored', errors: [], files: [], manifest: null, hash: null };
}

/** What a bundle is made of before its manifest: every file but the manifest (none when failed). */
export interface BundleParts<File extends FileDigest = BundleFile> {
  readonly nodeId: string;
  readonly status: 'ok' | 'failed';
  readonly errors: readonly NodeError[];
  readonly ordering: OrderingMode;
  readonly policies: readonly ManifestPolicy[];
  readonly properties: JsonObject;
  readonly files: readonly File[];
  /** The bundle hash of `files`, when the caller has it already (it is computed otherwise). */
  readonly hash?: string | null;
}

/** The bundle with its manifest (outputs.md); the hash covers every file but manifest and timestamp. */
export function assembleBundle<File extends FileDigest>(
  parts: BundleParts<File>,
  options: GenerateOptions,
): NodeBundle<File | BundleFile> {
  const ok = parts.status === 'ok';
  const files = [...parts.files].sort(byPath);
  const hash = ok ? (parts.hash ?? bundleHash(files)) : null;
  const manifest: PolicyManifest = {
    schemaVersion: 1,
    nodeId: parts.nodeId,
    configRevision: options.revision ?? 0,
    status: parts.status,
    errors: parts.errors,
    ordering: parts.ordering,
    policies: parts.policies,
    properties: parts.properties,
    files: mapList(files, (file) => ({ path: file.path, sha256: file.sha256 })),
    hash,
  };
  const manifestPartsText = manifestParts(manifest);
  const manifestFile = bundleFile(MANIFEST_FILE, manifestFromParts(manifest, manifestPartsText));
  return {
    nodeId: parts.nodeId,
    status: parts.status,
    errors: parts.errors,
    files: withFileInOrder<File | BundleFile>(files, manifestFile),
    manifest,
    manifestParts: manifestPartsText,
    hash,
  };
}

/** `files` (sorted by path) with `file` at its place: the list is not sorted a second time. */
function withFileInOrder<File extends FileDigest>(files: readonly File[], file: File): File[] {
  const listed = files.slice();
  const after = listed.findIndex((other) => byPath(file, other) < 0);
  listed.splice(after < 0 ? listed.length : after, 0, file);
  return listed;
}

export function manifestPolicies(
  policies: readonly FormedPolicy[],
  edges: readonly PolicyEdge[],
  basis: NodeModeBasis,
): ManifestPolicy[] {
  return mapList(policies, (policy) => {
    const modes = mapList(policy.drafts, (draft) => directiveMode(basis, draft.directive));
    return {
      id: policy.id,
      technique: { id: policy.technique.id, version: policy.technique.version },
      generation: policy.kind,
      bundle: policyBundleName(policy),
      mode: policyModeOf(modes),
      directives: mapList(policy.drafts, (draft, index) => ({
        id: draft.directive.id,
        rule: draft.rule.id,
        priority: draft.directive.priority,
        mode: (modes[index] as DirectiveMode).mode,
        modeSource: (modes[index] as DirectiveMode).source,
      })),
      overridden: mapList(policy.overridden, (draft) => ({
        id: draft.directive.id,
        rule: draft.rule.id,
        priority: draft.directive.priority,
        by: draft.by,
      })),
      ...relationsOf(policy.id, edges),
    };
  });
}

type PolicyRelations = Pick<ManifestPolicy, 'after' | 'skippedWhenFails'>;

const UNRELATED: PolicyRelations = { after: Object.freeze([]), skippedWhenFails: Object.freeze([]) };

/** Each plan's relations by policy, for the policies its edges name; the edges are the plan's own. */
const relationsByEdges = new WeakMap<readonly PolicyEdge[], Map<string, PolicyRelations>>();

/**
 * The policies a policy comes after and those skipped when it fails: the same for every node of a
 * plan and every time its node is generated again, so worked out once per plan (most plans have
 * no edge at all, and most policies of the others none of their own).
 */
function relationsOf(policyId: string, edges: readonly PolicyEdge[]): PolicyRelations {
  if (edges.length === 0) return UNRELATED;
  let relations = relationsByEdges.get(edges);
  if (!relations) {
    relations = new Map();
    for (const edge of edges)
      for (const id of [edge.from, edge.to])
        if (!relations.has(id))
          relations.set(id, {
            after: [...new Set(edges.filter((other) => other.to === id).map((other) => other.from))].sort(),
            skippedWhenFails: [...followingPolicies(id, edges)].sort(),
          });
    relationsByEdges.set(edges, relations);
  }
  return relations.get(policyId) ?? UNRELATED;
}
