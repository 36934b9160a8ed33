import type { CompiledFleet } from '../index/fleet-index';
import { computeNode } from '../generate/compute-node';
import type { GenerateOptions } from '../generate/types';

function dotId(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** The node's policy graph in Graphviz DOT; policies on a dependency cycle and its edges in red. */
export function nodeGraphDot(compiled: CompiledFleet, nodeId: string, options: GenerateOptions = {}): string {
  const computation = computeNode(compiled, nodeId, options);
  const lines = [`digraph ${dotId(`policies of ${nodeId}`)} {`, '  rankdir=LR;', '  node [shape=box];'];
  computation.policies.forEach((policy, index) => {
    const red = computation.onCycle.has(policy.id) ? ', color=red, fontcolor=red' : '';
    const label = `${index + 1}. ${policy.id}\\n${policy.drafts.map((draft) => draft.directive.id).join(', ')}`;
    lines.push(`  ${dotId(policy.id)} [label=${dotId(label).replace(/\\\\n/g, '\\n')}${red}];`);
  });
  for (const edge of computation.edges) {
    const onCycle = computation.onCycle.has(edge.from) && computation.onCycle.has(edge.to);
    const style = [
      `label=${dotId(edge.kind)}`,
      edge.refresh ? 'style=dashed' : '',
      onCycle ? 'color=red' : '',
    ].filter(Boolean);
    lines.push(`  ${dotId(edge.from)} -> ${dotId(edge.to)} [${style.join(', ')}];`);
  }
  lines.push('}', '');
  return lines.join('\n');
}
