import type { CompiledFleet } from '../generate/compile';
import type { GenerateOptions } from '../generate/types';

/** The node's policy graph in Graphviz DOT; policies on a dependency cycle and its edges in red. */
export function nodeGraphDot(
  _compiled: CompiledFleet,
  _nodeId: string,
  _options: GenerateOptions = {},
): string {
  throw new Error('not implemented yet');
}
