import { EXIT_OK } from '../errors';
import { readFleet } from '../io/read-fleet';
import { writeLine } from '../io/streams';
import { fleetOption } from '../options';
import type { CommandDefinition } from './context';

interface ValidateOptions {
  readonly fleet: string;
}

export const defineValidate: CommandDefinition = (program, { streams, exitWith }) => {
  program
    .command('validate')
    .description('check a fleet file; exit 2 and every issue with its JSON path if it is invalid')
    .addOption(fleetOption())
    .action(async (options: ValidateOptions) => {
      const fleet = await readFleet(options.fleet);
      const counts = [
        `${fleet.nodes.length} nodes`,
        `${fleet.relays.length} relays`,
        `${fleet.groups.length} groups`,
        `${fleet.rules.length} rules`,
        `${fleet.directives.length} directives`,
        `${fleet.techniques.length} techniques`,
        `${fleet.relationships.length} relationships`,
      ];
      writeLine(streams.stdout, `valid: ${counts.join(', ')}`);
      exitWith(EXIT_OK);
    });
};
