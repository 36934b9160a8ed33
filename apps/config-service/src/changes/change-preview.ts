import { createTwoFilesPatch } from 'diff';
import { GenerationEngine, NodeGenerator, sameResult } from '@policygen/engine';
import type {
  BundleFile,
  FleetIndex,
  NodeBundle,
  NodeError,
  NodeResult,
  ValidationIssue,
} from '@policygen/engine';
import { changeCounts } from '@policygen/store';
import type { ChangeCounts } from '@policygen/store';

/** How much of a change's effect a preview works out; a change to a global parameter may reach every node. */
export interface PreviewLimits {
  /** Affected node ids listed. */
  readonly listedNodes: number;
  /** Affected nodes generated before and after, to find which change and which fail. */
  readonly checkedNodes: number;
  /** Changed nodes whose bundles are compared file by file, with text diffs. */
  readonly diffedNodes: number;
  /** Characters of text diff per node; files whose diff does not fit are named in `undiffed`. */
  readonly diffCharactersPerNode: number;
}

export const DEFAULT_PREVIEW_LIMITS: PreviewLimits = {
  listedNodes: 10_000,
  checkedNodes: 2_000,
  diffedNodes: 20,
  diffCharactersPerNode: 64 * 1024,
};

export type BundleStatus = NodeResult['status'] | 'absent';

/** How one node's bundle would change. */
export interface NodeBundleDiff {
  readonly node: string;
  readonly status: { readonly before: BundleStatus; readonly after: BundleStatus };
  /** Bundle paths, sorted. */
  readonly files: { readonly added: string[]; readonly removed: string[]; readonly changed: string[] };
  /** Unified diffs of the changed and added files, by path: promises.cf and properties.json first. */
  readonly diffs: Record<string, string>;
  /** Changed or added files left without a diff: over the node's diff budget, or too different to diff. */
  readonly undiffed: string[];
}

/** What committing a change set would do, worked out without committing it. */
export interface ChangePreview {
  readonly dryRun: true;
  /** The revision the change set was checked against and would follow. */
  readonly revision: number;
  readonly counts: ChangeCounts;
  /** Nodes whose bundle the change can affect, sorted: the first `listedNodes` of `count`. */
  readonly affected: { readonly count: number; readonly nodes: string[] };
  /** Nodes the change deletes, sorted. */
  readonly removed: string[];
  /** Affected nodes generated before and after (the first ones, in id order), and those left out. */
  readonly checked: { readonly count: number; readonly leftOut: number };
  /** Checked nodes whose bundle, status or errors would change. */
  readonly changed: number;
  /** Checked nodes that would fail, and why; `before` says how each fared until now. */
  readonly failing: {
    readonly node: string;
    readonly before: BundleStatus;
    readonly errors: readonly NodeError[];
  }[];
  /** The first changed nodes, compared file by file; the others are counted in `diffsLeftOut`. */
  readonly nodes: NodeBundleDiff[];
  readonly diffsLeftOut: number;
}

/** A file's text diff is given up past this many edits (the diff's cost grows with them). */
const MAX_EDITS_PER_FILE = 5_000;
/** Fixed, so that the generation timestamp file never differs. */
const GENERATED_AT = 0;
const FIRST_DIFFED = ['/promises.cf', '/properties.json'];

/**
 * Previews a change set against the configuration of `index` at `revision`: validates it as a commit
 * would, applies it to a copy, and generates the affected nodes before and after. Pure and
 * synchronous: `index` is only read, and must not change while this runs.
 */
export function previewChange(
  current: { readonly revision: number; readonly index: FleetIndex },
  input: unknown,
  limits: PreviewLimits = DEFAULT_PREVIEW_LIMITS,
):
  | { readonly ok: true; readonly preview: ChangePreview }
  | { readonly ok: false; readonly issues: readonly ValidationIssue[] } {
  const { revision, index } = current;
  // The copy takes the memberships as they are rather than evaluate every group again; only the
  // per-node lists (copied), never the live index's member sets, which it would take as its own.
  const after = GenerationEngine.fromFleetAndMemberships(
    index.toFleet(),
    { groupsOfNode: index.groupsOfNode, rulesOfNode: index.rulesOfNode },
    { revision },
  );
  const outcome = after.apply(input);
  if (!outcome.ok) return { ok: false, issues: outcome.issues };

  const before = new NodeGenerator(index);
  // Both sides at the revision the change would get: manifests differ by what changed, not by their revision.
  const generation = { revision: after.revision, generatedAt: GENERATED_AT };
  const generateBefore = (
    nodeId: string,
    materialise: boolean,
  ): { result?: NodeResult; bundle?: NodeBundle } =>
    index.nodes.has(nodeId) ? before.generate(nodeId, { ...generation, materialise }) : {};

  const checked = outcome.affected.slice(0, limits.checkedNodes);
  const failing: ChangePreview['failing'] = [];
  const nodes: NodeBundleDiff[] = [];
  let changed = 0;
  for (const nodeId of checked) {
    const was = generateBefore(nodeId, false).result;
    const will = after.compute(nodeId, { generatedAt: GENERATED_AT }).result;
    if (will.status === 'failed')
      failing.push({ node: nodeId, before: was?.status ?? 'absent', errors: will.errors });
    if (sameResult(was, will)) continue;
    changed++;
    if (nodes.length >= limits.diffedNodes) continue;
    nodes.push(
      bundleDiff(
        nodeId,
        generateBefore(nodeId, true).bundle,
        after.compute(nodeId, { generatedAt: GENERATED_AT, materialise: true }).bundle,
        limits.diffCharactersPerNode,
      ),
    );
  }

  return {
    ok: true,
    preview: {
      dryRun: true,
      revision,
      counts: changeCounts(outcome.change),
      affected: { count: outcome.affected.length, nodes: outcome.affected.slice(0, limits.listedNodes) },
      removed: [...outcome.removed],
      checked: { count: checked.length, leftOut: outcome.affected.length - checked.length },
      changed,
      failing,
      nodes,
      diffsLeftOut: changed - nodes.length,
    },
  };
}

/** Two bundles of a node compared file by file, with text diffs within `budget` characters. */
export function bundleDiff(
  nodeId: string,
  was: NodeBundle | undefined,
  will: NodeBundle | undefined,
  budget: number,
): NodeBundleDiff {
  const oldFiles = filesByPath(was);
  const newFiles = filesByPath(will);
  const added = [...newFiles.keys()].filter((path) => !oldFiles.has(path)).sort();
  const removed = [...oldFiles.keys()].filter((path) => !newFiles.has(path)).sort();
  const changed = [...newFiles]
    .filter(([path, file]) => oldFiles.has(path) && oldFiles.get(path)?.sha256 !== file.sha256)
    .map(([path]) => path)
    .sort();

  const diffs: Record<string, string> = {};
  const undiffed: string[] = [];
  let left = budget;
  for (const path of [...changed, ...added].sort(firstDiffedFirst)) {
    const diff =
      left > 0
        ? createTwoFilesPatch(
            oldFiles.has(path) ? `a/${path}` : '/dev/null',
            `b/${path}`,
            oldFiles.get(path)?.content ?? '',
            newFiles.get(path)?.content ?? '',
            undefined,
            undefined,
            { context: 3, maxEditLength: MAX_EDITS_PER_FILE },
          )
        : undefined;
    if (diff === undefined || diff.length > left) {
      undiffed.push(path);
      continue;
    }
    diffs[path] = diff;
    left -= diff.length;
  }
  return {
    node: nodeId,
    status: { before: was?.status ?? 'absent', after: will?.status ?? 'absent' },
    files: { added, removed, changed },
    diffs,
    undiffed,
  };
}

function filesByPath(bundle: NodeBundle | undefined): Map<string, BundleFile> {
  return new Map((bundle?.files ?? []).map((file) => [file.path, file]));
}

/** promises.cf and properties.json first (what a reviewer reads first), then by path. */
function firstDiffedFirst(a: string, b: string): number {
  const rank = (path: string): number => {
    const position = FIRST_DIFFED.findIndex((suffix) => path.endsWith(suffix));
    return position === -1 ? FIRST_DIFFED.length : position;
  };
  return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0);
}
