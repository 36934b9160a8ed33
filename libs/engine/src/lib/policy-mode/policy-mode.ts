import type { Directive, FleetNode, PolicyMode, Settings } from '../model/fleet';

/** Where a policy mode was set (semantics.md §5b). */
export type PolicyModeSource = 'global' | 'node' | 'directive';

/** What a node's directives start from: the mode, and whether a directive may set its own. */
export interface NodeModeBasis {
  readonly mode: PolicyMode;
  readonly source: 'global' | 'node';
  /** No directive may change it: the global mode is not overridable, or the node is in audit. */
  readonly fixed: boolean;
}

export interface DirectiveMode {
  readonly mode: PolicyMode;
  readonly source: PolicyModeSource;
}

/**
 * Rudder's rules (`PolicyMode.directivePolicyMode`): a global mode that is not overridable applies
 * everywhere; a node in audit keeps all its directives in audit (audit never turns into a change a
 * node's owner did not allow); otherwise a directive's own mode, else the node's, else the global.
 */
export function nodeModeBasis(settings: Settings, node: FleetNode): NodeModeBasis {
  if (!settings.policyModeOverridable) return { mode: settings.policyMode, source: 'global', fixed: true };
  if (node.policyMode === 'audit') return { mode: 'audit', source: 'node', fixed: true };
  if (node.policyMode !== undefined) return { mode: node.policyMode, source: 'node', fixed: false };
  return { mode: settings.policyMode, source: 'global', fixed: false };
}

export function directiveMode(basis: NodeModeBasis, directive: Directive): DirectiveMode {
  if (basis.fixed || directive.policyMode === undefined) return { mode: basis.mode, source: basis.source };
  return { mode: directive.policyMode, source: 'directive' };
}

/** What a policy's files depend on in a basis (not where the mode came from): a cache key part. */
export function basisKey(basis: NodeModeBasis): string {
  return basis.fixed ? `${basis.mode}!` : basis.mode;
}

/** A policy's mode: its directives', or `mixed` when they disagree (each then runs in its own). */
export function policyModeOf(modes: readonly DirectiveMode[]): PolicyMode | 'mixed' {
  const first = modes[0]?.mode ?? 'enforce';
  return modes.every((entry) => entry.mode === first) ? first : 'mixed';
}
