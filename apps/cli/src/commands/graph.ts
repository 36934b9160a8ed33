import { nodeGraphDot } from '@policygen/engine';
import type { OrderingMode } from '@policygen/engine';
import { EXIT_OK } from '../errors';
import { checkNodeIds, readCompiledFleet } from '../io/read-fleet';
import { writeLine } from '../io/streams';
import { fleetOption, generateOptions, nodeOption, orderingOption } from '../options';
import type { CommandDefinition } from './context';

interface GraphOptions {
  readonly fleet: string;
  readonly node: string;
  readonly ordering?: OrderingMode;
}

export const defineGraph: CommandDefinition = (program, { streams, exitWith }) => {
  program
    .command('graph')
    .description("the node's policy graph in Graphviz DOT, dependency cycles in red (pipe it to `dot -Tsvg`)")
    .addOption(fleetOption())
    .addOption(nodeOption())
    .addOption(orderingOption())
    .action(async (options: GraphOptions) => {
      const compiled = await readCompiledFleet(options.fleet);
      checkNodeIds(compiled, [options.node]);
      writeLine(
        streams.stdout,
        nodeGraphDot(compiled, options.node, generateOptions({ ordering: options.ordering })),
      );
      exitWith(EXIT_OK);
    });
};
