import type { CompiledFleet } from '../index/fleet-index';
import type { NodeError } from '../generate/types';
import type { Directive, PolicyGeneration, Rule, Technique } from '../model/fleet';
import { compareCodeUnits, foldCase } from '../text/compare';
import { mapList } from '../model/lists';

/** A (rule, directive) pair applied on a node (semantics.md §1). */
export interface Draft {
  readonly rule: Rule;
  readonly directive: Directive;
  readonly technique: Technique;
}

export type PolicyKind = PolicyGeneration | 'unique';

/** One policy of a node before ordering: the drafts it is made of, in merged-value order. */
export interface FormedPolicy {
  readonly id: string;
  readonly technique: Technique;
  readonly kind: PolicyKind;
  /** One draft per directive, in `priorityThenNames` order: the order of the values. */
  readonly drafts: readonly Draft[];
  readonly overridden: readonly (Draft & { readonly by: string })[];
  /** The smallest draft by `namesOnly` among those forming the policy: its default position. */
  readonly positionDraft: Draft;
}

/** What `namesOnly` compares, computed once per draft: names folded as Java folds them, then the tie-break. */
interface DraftNames {
  readonly rule: string;
  readonly directive: string;
  readonly tie: string;
  readonly ruleId: string;
}

const draftNames = new WeakMap<Draft, DraftNames>();

function namesOf(draft: Draft): DraftNames {
  let names = draftNames.get(draft);
  if (!names) {
    names = {
      rule: foldCase(draft.rule.name),
      directive: foldCase(draft.directive.name),
      tie: `${draft.technique.version}_${draft.directive.id}`,
      // The same directive through two rules of the same name: the rule id makes the order total.
      ruleId: draft.rule.id,
    };
    draftNames.set(draft, names);
  }
  return names;
}

/** (rule name, directive name), case-insensitive, then the tie-break. */
export function namesOnly(a: Draft, b: Draft): number {
  const left = namesOf(a);
  const right = namesOf(b);
  return (
    compareCodeUnits(left.rule, right.rule) ||
    compareCodeUnits(left.directive, right.directive) ||
    compareCodeUnits(left.tie, right.tie) ||
    compareCodeUnits(left.ruleId, right.ruleId)
  );
}

/** Priority ascending (0 is the highest), then `namesOnly`. */
export function priorityThenNames(a: Draft, b: Draft): number {
  return a.directive.priority - b.directive.priority || namesOnly(a, b);
}

/** Every (rule, directive) pair of the node whose directive is enabled, each pair once. */
export function draftsOfNode(compiled: CompiledFleet, nodeId: string): Draft[] {
  return draftsOfRules(compiled, compiled.rulesOfNode.get(nodeId) ?? []);
}

/** The drafts a set of rules gives (sorted rule ids): a node's drafts depend on its rules only. */
export function draftsOfRules(compiled: CompiledFleet, ruleIds: readonly string[]): Draft[] {
  const drafts: Draft[] = [];
  for (const ruleId of ruleIds) {
    const rule = compiled.rules.get(ruleId) as Rule;
    for (const directiveId of new Set(rule.directives)) {
      const directive = compiled.directives.get(directiveId);
      if (!directive?.enabled) continue;
      const technique = techniqueOf(compiled, directive);
      if (technique) drafts.push({ rule, directive, technique });
    }
  }
  return drafts;
}

export function techniqueOf(compiled: CompiledFleet, directive: Directive): Technique | undefined {
  const versions = compiled.techniques.get(directive.technique);
  if (!versions) return undefined;
  if (directive.techniqueVersion !== undefined) return versions.get(directive.techniqueVersion);
  return versions.size === 1 ? [...versions.values()][0] : undefined;
}

/** Drafts of one directive reached by several rules count once: its first draft in `order`. */
function firstDraftPerDirective(drafts: readonly Draft[], order: (a: Draft, b: Draft) => number): Draft[] {
  const seen = new Set<string>();
  return [...drafts].sort(order).filter((draft) => {
    if (seen.has(draft.directive.id)) return false;
    seen.add(draft.directive.id);
    return true;
  });
}

function smallest(drafts: readonly Draft[]): Draft {
  return [...drafts].sort(namesOnly)[0] as Draft;
}

export interface FormedPolicies {
  readonly policies: FormedPolicy[];
  readonly errors: NodeError[];
}

/** The policies one technique's drafts form on a node, and the errors forming them gives. */
export type TechniquePolicies = FormedPolicies;

/** Groups the drafts by technique and merges each group as its technique says (semantics.md §2). */
export function formPolicies(
  drafts: readonly Draft[],
  formGroup: (techniqueId: string, drafts: readonly Draft[]) => TechniquePolicies = formTechniquePolicies,
): FormedPolicies {
  const byTechnique = new Map<string, Draft[]>();
  for (const draft of drafts) {
    const group = byTechnique.get(draft.technique.id);
    if (group) group.push(draft);
    else byTechnique.set(draft.technique.id, [draft]);
  }
  const policies: FormedPolicy[] = [];
  const errors: NodeError[] = [];
  for (const techniqueId of [...byTechnique.keys()].sort(compareCodeUnits)) {
    const formed = formGroup(techniqueId, byTechnique.get(techniqueId) as Draft[]);
    policies.push(...formed.policies);
    errors.push(...formed.errors);
  }
  return { policies, errors };
}

/**
 * The policies of one technique's drafts on a node. Each draft merges as its own technique version
 * says (Rudder's `PolicyAgregation`): the drafts of unique versions give one policy, those of
 * merged versions another, those of separated versions one each. A technique both unique and
 * merged on one node, or merged in several versions, is a `TECHNIQUE_VERSION_CONFLICT`.
 */
export function formTechniquePolicies(techniqueId: string, group: readonly Draft[]): TechniquePolicies {
  const policies: FormedPolicy[] = [];
  const errors: NodeError[] = [];
  const unique = group.filter((draft) => !draft.technique.multiInstance);
  const merged = group.filter(
    (draft) => draft.technique.multiInstance && draft.technique.policyGeneration === 'merged',
  );
  const separated = group.filter(
    (draft) => draft.technique.multiInstance && draft.technique.policyGeneration !== 'merged',
  );
  if (unique.length > 0 && merged.length > 0)
    errors.push(versionConflict(techniqueId, [...unique, ...merged], 'both unique and merged'));
  if (unique.length > 0) {
    // Every (rule, directive) pair but the winner's is overridden, the winner's other rules too.
    const [leader, ...losers] = [...unique].sort(priorityThenNames) as [Draft, ...Draft[]];
    policies.push({
      id: techniqueId,
      technique: leader.technique,
      kind: 'unique',
      drafts: [leader],
      overridden: mapList(losers, (draft) => ({ ...draft, by: leader.directive.id })),
      positionDraft: smallest(unique.filter((draft) => draft.directive.id === leader.directive.id)),
    });
  }
  if (merged.length > 0) {
    const ordered = firstDraftPerDirective(merged, priorityThenNames);
    const leader = ordered[0] as Draft;
    if (new Set(ordered.map((draft) => draft.technique.version)).size > 1)
      errors.push(versionConflict(techniqueId, ordered, 'merged in several versions'));
    policies.push({
      id: techniqueId,
      technique: leader.technique,
      kind: 'merged',
      drafts: ordered,
      overridden: [],
      positionDraft: smallest(merged),
    });
  }
  for (const draft of firstDraftPerDirective(separated, namesOnly)) {
    policies.push({
      id: `${techniqueId}:${draft.directive.id}`,
      technique: draft.technique,
      kind: draft.technique.policyGeneration,
      drafts: [draft],
      overridden: [],
      positionDraft: draft,
    });
  }
  return { policies, errors };
}

function versionConflict(techniqueId: string, drafts: readonly Draft[], how: string): NodeError {
  const ordered = firstDraftPerDirective(drafts, priorityThenNames);
  const versions = [...new Set(ordered.map((draft) => draft.technique.version))].sort(compareCodeUnits);
  return {
    code: 'TECHNIQUE_VERSION_CONFLICT',
    message:
      `Technique ${techniqueId} is used ${how} on this node: ` +
      mapList(
        versions,
        (version) =>
          `${version} (${mapList(
            ordered.filter((draft) => draft.technique.version === version),
            (draft) => draft.directive.id,
          ).join(', ')})`,
      ).join(', '),
    directiveIds: mapList(ordered, (draft) => draft.directive.id),
  };
}
