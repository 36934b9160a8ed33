import type { Json, JsonObject } from '../model/json';
import type { OrderingMode, PolicyGeneration, PolicyMode } from '../model/fleet';
import type { PolicyModeSource } from '../policy-mode/policy-mode';

export const NODE_ERROR_CODES = [
  'DEPENDENCY_CYCLE',
  'MISSING_DEPENDENCY',
  'PROPERTY_CONFLICT',
  'UNKNOWN_VARIABLE',
  'TECHNIQUE_VERSION_CONFLICT',
  'MISSING_PARAMETER',
  /** Generating the node threw: a defect, recorded as the node's failure so the others go on. */
  'GENERATION_ERROR',
  /** The node's files add up to more than `settings.maxBundleBytes`: it keeps its last good tree. */
  'BUNDLE_TOO_LARGE',
] as const;
export type NodeErrorCode = (typeof NODE_ERROR_CODES)[number];

/** Why a node could not be generated (semantics.md §6). */
export interface NodeError {
  readonly code: NodeErrorCode;
  readonly message: string;
  readonly directiveIds?: readonly string[];
  readonly ruleIds?: readonly string[];
  readonly groupIds?: readonly string[];
}

export interface GenerateOptions {
  /** The configuration revision the bundles are generated at (manifest `configRevision`). */
  readonly revision?: number;
  /** Epoch milliseconds written to `rudder-promises-generated`; never part of a hash. */
  readonly generatedAt?: number;
  /** Overrides the fleet's ordering mode and every node's `policygen_ordering` property. */
  readonly ordering?: OrderingMode;
}

/** How one policy was formed, in manifest shape (outputs.md). */
export interface ManifestPolicy {
  readonly id: string;
  readonly technique: { readonly id: string; readonly version: string };
  readonly generation: PolicyGeneration | 'unique';
  readonly bundle: string;
  /**
   * `enforce` or `audit` (semantics.md §5b); `mixed` when a merged policy's directives disagree:
   * then each directive's promises run in its own mode, and this says so rather than pick one.
   */
  readonly mode: PolicyMode | 'mixed';
  readonly directives: readonly {
    readonly id: string;
    readonly rule: string;
    readonly priority: number;
    readonly mode: PolicyMode;
    /** Where the mode was set: the global setting, the node or the directive. */
    readonly modeSource: PolicyModeSource;
  }[];
  readonly overridden: readonly {
    readonly id: string;
    readonly rule: string;
    readonly priority: number;
    readonly by: string;
  }[];
  readonly after: readonly string[];
  /**
   * The policies the agent skips in a run where this one fails: those that follow it by any
   * relationship, transitively (semantics.md §3.6).
   */
  readonly skippedWhenFails: readonly string[];
}

export interface PolicyManifest {
  readonly schemaVersion: 1;
  readonly nodeId: string;
  readonly configRevision: number;
  readonly status: 'ok' | 'failed';
  readonly errors: readonly NodeError[];
  readonly ordering: OrderingMode;
  readonly policies: readonly ManifestPolicy[];
  readonly properties: JsonObject;
  readonly files: readonly { readonly path: string; readonly sha256: string }[];
  readonly hash: string | null;
}

export interface BundleFile {
  /** Relative to the node's bundle root, with `/` separators. */
  readonly path: string;
  readonly content: string;
  readonly sha256: string;
  /** Bytes of `content` as UTF-8. */
  readonly bytes: number;
}

/** A file of a bundle known by its digest alone. */
export type FileDigest = Pick<BundleFile, 'path' | 'sha256' | 'bytes'>;

/** A bundle file whose content is left out when the caller holds that digest already. */
export type BundleEntry = FileDigest & { readonly content?: string };

/**
 * Says which digests the caller holds already (a cache): their files come without content, and
 * the engine need not render them again to materialise a bundle.
 */
export type StoredDigests = (sha256: string) => boolean;

export interface NodeBundle<File extends FileDigest = BundleFile> {
  readonly nodeId: string;
  /** `ignored`: the node's state is `ignored`, it gets nothing, not even a manifest. */
  readonly status: 'ok' | 'failed' | 'ignored';
  readonly errors: readonly NodeError[];
  /**
   * Every file of the node's tree, `policy-manifest.json` included, sorted by path. A failed node
   * has only its manifest (it keeps its last good tree); an ignored node has none.
   */
  readonly files: readonly File[];
  readonly manifest: PolicyManifest | null;
  /** The manifest's shared members as text (generate.ts, `manifestParts`), when it has one. */
  readonly manifestParts?: { readonly head: string; readonly properties: string };
  /** `sha256:<hex>` over every file but the manifest and the generation timestamp; null unless ok. */
  readonly hash: string | null;
}

export type { Json };
