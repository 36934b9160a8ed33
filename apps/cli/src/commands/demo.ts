import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { GenerationEngine, validateFleet } from '@policygen/engine';
import { buildDemoFleet } from '@policygen/fleets';
import { EXIT_FAILED, EXIT_OK, FleetValidationError } from '../errors';
import { generateInto, reportFailures } from '../generation';
import { formatSeconds, writeLine } from '../io/streams';
import { prepareOutputDirectory } from '../io/write-bundles';
import type { CommandDefinition } from './context';

interface StartOptions {
  readonly out: string;
}

export const DEMO_FLEET_FILE = 'demo.fleet.json';

export const defineDemo: CommandDefinition = (program, { streams, exitWith }) => {
  program
    .command('demo')
    .description(
      'generate the built-in demo fleet (300 nodes, two relays) into --out, and show how to explore it',
    )
    .option('-o, --out <dir>', 'the output directory', 'out')
    .action(async (options: StartOptions) => {
      const started = performance.now();
      const fleetFile = buildDemoFleet();
      const validation = validateFleet(fleetFile);
      if (!validation.ok) throw new FleetValidationError('the demo fleet', validation.issues);
      const fleet = validation.fleet;

      await prepareOutputDirectory(options.out);
      const fleetPath = join(options.out, DEMO_FLEET_FILE);
      await writeFile(fleetPath, `${JSON.stringify(fleetFile, null, 2)}\n`);

      const engine = GenerationEngine.fromFleet(fleet);
      const nodeIds = engine.compiled.nodeIds;
      const summary = await generateInto(engine, nodeIds, options.out, { generatedAt: Date.now() }, streams);
      const duration = formatSeconds(performance.now() - started);
      reportFailures(summary, streams);

      const okNodes = Object.keys(summary.hashes);
      const example = okNodes.find((id) => id.startsWith('web-par-')) ?? okNodes[0] ?? nodeIds[0] ?? 'NODE';
      const perNode = summary.ok > 0 ? (summary.policies / summary.ok).toFixed(1) : '0';
      const lines = [
        `policygen demo fleet: ${fleet.nodes.length} nodes under root and ${fleet.relays.length} relays, ` +
          `${fleet.groups.length} groups, ${fleet.rules.length} rules, ${fleet.directives.length} directives, ` +
          `${fleet.techniques.length} techniques`,
        '',
        `  fleet file  ${fleetPath}`,
        `  bundles     ${join(options.out, '<node id>')}/  ${summary.ok} ok, ${summary.failed} failed, ${summary.ignored} ignored`,
        `  policies    ${summary.policies} in all, ${perNode} per node`,
        `  time        ${duration}`,
        '',
        'Explore it:',
        `  npx policygen explain --fleet ${fleetPath} --node ${example}`,
        `  npx policygen graph --fleet ${fleetPath} --node ${example} > ${example}.dot`,
        `  cat ${join(options.out, example, 'policy-manifest.json')}`,
        `  npx policygen generate --fleet ${fleetPath} --out ${options.out} --node ${example} --ordering title-hash`,
        `  npx policygen validate --fleet ${fleetPath}`,
        `  npx policygen --help`,
      ];
      writeLine(streams.stdout, lines.join('\n'));
      exitWith(summary.failed > 0 ? EXIT_FAILED : EXIT_OK);
    });
};
