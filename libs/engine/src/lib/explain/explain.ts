import type { CompiledFleet } from '../generate/compile';
import type { GenerateOptions } from '../generate/types';
import type { NodeExplanation } from './types';

export function explainNode(
  _compiled: CompiledFleet,
  _nodeId: string,
  _options: GenerateOptions = {},
): NodeExplanation {
  throw new Error('not implemented yet');
}

/** The explanation as text for a terminal. */
export function formatExplanation(_explanation: NodeExplanation): string {
  throw new Error('not implemented yet');
}
