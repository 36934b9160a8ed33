import { explainNode, formatExplanation } from '@policygen/engine';
import type { OrderingMode } from '@policygen/engine';
import { EXIT_OK } from '../errors';
import { checkNodeIds, readCompiledFleet } from '../io/read-fleet';
import { writeLine } from '../io/streams';
import { fleetOption, generateOptions, nodeOption, orderingOption } from '../options';
import type { CommandDefinition } from './context';

interface ExplainOptions {
  readonly fleet: string;
  readonly node: string;
  readonly ordering?: OrderingMode;
  readonly json?: boolean;
}

export const defineExplain: CommandDefinition = (program, { streams, exitWith }) => {
  program
    .command('explain')
    .description(
      "why a node gets its policies in this order: drafts, merged values, overrides, relationships, variables' and properties' sources",
    )
    .addOption(fleetOption())
    .addOption(nodeOption())
    .addOption(orderingOption())
    .option('--json', 'print the explanation as JSON')
    .action(async (options: ExplainOptions) => {
      const compiled = await readCompiledFleet(options.fleet);
      checkNodeIds(compiled, [options.node]);
      const explanation = explainNode(
        compiled,
        options.node,
        generateOptions({ ordering: options.ordering }),
      );
      writeLine(
        streams.stdout,
        options.json ? JSON.stringify(explanation, null, 2) : formatExplanation(explanation),
      );
      exitWith(EXIT_OK);
    });
};
