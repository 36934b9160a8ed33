import type { CompiledFleet } from './compile';
import type { GenerateOptions, NodeBundle } from './types';

/** Generates one node's bundle. Pure: the same inputs give the same bytes. */
export function generateNode(_compiled: CompiledFleet, _nodeId: string, _options: GenerateOptions = {}): NodeBundle {
  throw new Error('not implemented yet');
}
