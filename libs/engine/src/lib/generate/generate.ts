import { createHash } from 'node:crypto';
import type { FormedPolicy } from '../merge/policies';
import { GENERATED_AT_FILE, policyBundleName, renderNodeFiles } from '../render/node-files';
import type { CompiledFleet } from './compile';
import type { NodeComputation } from './compute-node';
import { computeNode } from './compute-node';
import type { BundleFile, GenerateOptions, ManifestPolicy, NodeBundle, PolicyManifest } from './types';

export const MANIFEST_FILE = 'policy-manifest.json';

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Generates one node's bundle. Pure: the same inputs give the same bytes. */
export function generateNode(
  compiled: CompiledFleet,
  nodeId: string,
  options: GenerateOptions = {},
): NodeBundle {
  return bundleOf(computeNode(compiled, nodeId, options), options);
}

export function bundleOf(computation: NodeComputation, options: GenerateOptions): NodeBundle {
  const nodeId = computation.node.id;
  if (computation.status === 'ignored') {
    return { nodeId, status: 'ignored', errors: [], files: [], manifest: null, hash: null };
  }
  const ok = computation.status === 'ok';
  const rendered = ok ? renderNodeFiles(computation, options.generatedAt ?? 0) : new Map<string, string>();
  const files: BundleFile[] = [...rendered.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([path, content]) => ({ path, content, sha256: sha256(content) }));
  const hashed = files.filter((file) => file.path !== GENERATED_AT_FILE);
  const hash = ok
    ? `sha256:${sha256(hashed.map((file) => `${file.path}\u0000${file.sha256}\n`).join(''))}`
    : null;

  const manifest: PolicyManifest = {
    schemaVersion: 1,
    nodeId,
    configRevision: options.revision ?? 0,
    status: ok ? 'ok' : 'failed',
    errors: computation.errors,
    ordering: computation.ordering.mode,
    policies: computation.policies.map((policy) => manifestPolicy(policy, computation)),
    properties: computation.inherited.properties,
    files: files.map((file) => ({ path: file.path, sha256: file.sha256 })),
    hash,
  };
  const manifestText = `${JSON.stringify(manifest, null, 2)}\n`;
  const manifestFile: BundleFile = {
    path: MANIFEST_FILE,
    content: manifestText,
    sha256: sha256(manifestText),
  };
  return {
    nodeId,
    status: computation.status,
    errors: computation.errors,
    files: [manifestFile, ...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
    manifest,
    hash,
  };
}

function manifestPolicy(policy: FormedPolicy, computation: NodeComputation): ManifestPolicy {
  const after = [
    ...new Set(computation.edges.filter((edge) => edge.to === policy.id).map((edge) => edge.from)),
  ].sort();
  return {
    id: policy.id,
    technique: { id: policy.technique.id, version: policy.technique.version },
    generation: policy.kind,
    bundle: policyBundleName(policy),
    directives: policy.drafts.map((draft) => ({
      id: draft.directive.id,
      rule: draft.rule.id,
      priority: draft.directive.priority,
    })),
    overridden: policy.overridden.map((draft) => ({
      id: draft.directive.id,
      rule: draft.rule.id,
      priority: draft.directive.priority,
      by: draft.by,
    })),
    after,
  };
}
