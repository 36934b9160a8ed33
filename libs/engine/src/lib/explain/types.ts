import type { Json } from '../model/json';
import type { OrderingMode } from '../model/fleet';
import type { ManifestPolicy, NodeError } from '../generate/types';

export interface ExplainedDraft {
  readonly directiveId: string;
  readonly directiveName: string;
  readonly ruleId: string;
  readonly ruleName: string;
  readonly priority: number;
}

export interface ExplainedPolicy {
  /** 1-based place in the node's apply order. */
  readonly position: number;
  readonly policy: ManifestPolicy;
  /** Drafts in merged-value order (priority, rule name, directive name). */
  readonly drafts: readonly ExplainedDraft[];
  readonly overridden: readonly (ExplainedDraft & { readonly by: string })[];
  /** The draft whose (rule name, directive name) gives the policy its default position. */
  readonly positionDraft: ExplainedDraft;
  /** The key the ordering mode sorts unrelated policies by. */
  readonly orderingKey: string;
  /** Explicit relationships that force this policy after others. */
  readonly after: readonly {
    readonly policyId: string;
    readonly kind: string;
    readonly directiveIds: readonly [string, string];
  }[];
  /** One sentence: why the policy is at this place. */
  readonly reason: string;
}

export interface ExplainedVariable {
  readonly policyId: string;
  readonly variable: string;
  readonly value: string;
  readonly directiveId: string;
  /** Earlier declarations of the same variable in the policy, which the effective one overrides. */
  readonly overrides: readonly { readonly directiveId: string; readonly value: string }[];
}

export interface ExplainedProperty {
  readonly name: string;
  readonly value: Json;
  readonly source: 'global' | 'group' | 'node';
  readonly groupId?: string;
  /** The inheritance mode the property's levels combined in, when one of them set one. */
  readonly inheritMode?: string;
  /** Less specific levels that gave this property a value, least specific first. */
  readonly overrides: readonly {
    readonly source: 'global' | 'group' | 'node';
    readonly groupId?: string;
    readonly value: Json;
  }[];
}

export interface NodeExplanation {
  readonly nodeId: string;
  readonly hostname: string;
  readonly status: 'ok' | 'failed' | 'ignored';
  readonly state: string;
  readonly errors: readonly NodeError[];
  readonly ordering: { readonly mode: OrderingMode; readonly source: 'fleet' | 'node property' | 'option' };
  readonly groups: readonly string[];
  readonly rules: readonly {
    readonly id: string;
    readonly name: string;
    readonly applied: boolean;
    readonly reason: string;
  }[];
  readonly policies: readonly ExplainedPolicy[];
  readonly variables: readonly ExplainedVariable[];
  readonly properties: readonly ExplainedProperty[];
  readonly warnings: readonly string[];
}
