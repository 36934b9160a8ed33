import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { runAgent } from '@policygen/testing-agent';
import { awkwardText } from '../../testing/awkward-text';
import { compileValid, fleetFile, rule } from '../../testing/builders';
import { generateNode } from '../generate/generate';
import { hasControlCharacter } from '../validation/limits';
import { validateFleet } from '../validation/validate';

/**
 * Values are data (semantics.md §5): what a generation-time reference inserts reaches the agent
 * byte for byte where the technique writes it, and a directive's own text keeps every character
 * that is no variable reference. Proven by the real `cf-agent` writing each value to a file.
 */

const OPTIONS = { generatedAt: 1_700_000_000_000, revision: 1 } as const;
const unfitInHostname = (character: string): boolean =>
  /\s/.test(character) || hasControlCharacter(character);

/** Writes `{{value}}` into the file `out/{{slot}}` of the agent's work directory. */
function writer(id: string, policyGeneration: string): Record<string, unknown> {
  return {
    id,
    version: '1.0',
    name: id,
    multiInstance: true,
    policyGeneration,
    parameters: [{ name: 'slot', required: true }, { name: 'value' }],
    promises: [
      {
        type: 'files',
        promiser: '$(sys.workdir)/out/{{slot}}',
        attributes: { create: 'true', content: '{{value}}' },
      },
    ],
  };
}

interface Written {
  readonly slot: string;
  readonly value: string;
}

/** The files the agent wrote, by slot; rejects a tree cf-promises refuses. */
function agentWrites(fleet: Record<string, unknown>, slots: readonly string[]): Record<string, string> {
  return agentRun(fleet, slots).written;
}

function agentRun(
  fleet: Record<string, unknown>,
  slots: readonly string[],
): { written: Record<string, string>; dir: string } {
  const bundle = generateNode(compileValid(fleet), 'n1', OPTIONS);
  if (bundle.status !== 'ok') throw new Error(JSON.stringify(bundle.errors));
  const result = runAgent(new Map(bundle.files.map((file) => [file.path, file.content])));
  try {
    expect(result.rejected).toBeNull();
    return {
      dir: result.dir,
      written: Object.fromEntries(
        slots.map((slot) => [slot, readFileSync(join(result.dir, 'out', slot), 'utf8')]),
      ),
    };
  } finally {
    result.remove();
  }
}

/** One directive per value, of a merged and of a separated-with-parameters technique. */
function fleetOf(
  entries: readonly Written[],
  extra: { parameters?: Record<string, unknown>; hostname?: string; properties?: Record<string, unknown> },
): Record<string, unknown> {
  const directives = entries.flatMap(({ slot, value }) => [
    { id: `m${slot}`, name: `m${slot}`, technique: 'merged', parameters: { slot: `m${slot}`, value } },
    { id: `p${slot}`, name: `p${slot}`, technique: 'passed', parameters: { slot: `p${slot}`, value } },
  ]);
  return fleetFile({
    parameters: extra.parameters ?? {},
    techniques: [writer('merged', 'merged'), writer('passed', 'separated-with-parameters')],
    directives,
    rules: [
      rule(
        'r',
        directives.map((directive) => directive.id),
      ),
    ],
    nodes: [{ id: 'n1', hostname: extra.hostname ?? 'n1.example.com', properties: extra.properties ?? {} }],
  });
}

const slotsOf = (entries: readonly Written[]): string[] =>
  entries.flatMap(({ slot }) => [`m${slot}`, `p${slot}`]);

describe('values on the agent', () => {
  it("keeps every character of a directive's own text that is no variable reference", () => {
    const texts = ['cost $( 5', 'a ${ b', 'empty $() and ${}', '$(sys.fqhost', 'end $', 'C:\\new\\table "q"'];
    const entries = texts.map((value, index) => ({ slot: String(index), value }));
    const written = agentWrites(fleetOf(entries, {}), slotsOf(entries));
    for (const { slot, value } of entries) {
      expect({ slot, text: written[`m${slot}`] }).toEqual({ slot, text: value });
      expect({ slot, text: written[`p${slot}`] }).toEqual({ slot, text: value });
    }
  });

  it("leaves the directive's own references to the agent", () => {
    const entries = [{ slot: '0', value: 'in $(sys.workdir)/${const.dollar}' }];
    const { written, dir } = agentRun(fleetOf(entries, {}), slotsOf(entries));
    expect(written['m0']).toBe(`in ${dir}/$`);
    expect(written['p0']).toBe(`in ${dir}/$`);
  });

  it('gives what a parameter, a property or the hostname inserts to the agent byte for byte, or refuses it (fast-check)', () => {
    const text = awkwardText(12);
    const COUNT = 8;
    fc.assert(
      fc.property(fc.array(text, { minLength: COUNT, maxLength: COUNT }), text, (texts, hostnameText) => {
        const hostname = hostnameText === '' ? 'h' : hostnameText;
        const parameters = Object.fromEntries(texts.map((value, index) => [`p${index}`, value]));
        // Each value inserted three ways: a global parameter, a property, and the hostname.
        const entries: Written[] = [
          ...texts.map((_value, index) => ({ slot: `param${index}`, value: `\${rudder.param.p${index}}` })),
          ...texts.map((_value, index) => ({
            slot: `property${index}`,
            value: `\${node.properties[texts][k${index}]}`,
          })),
          { slot: 'hostname', value: '[${rudder.node.hostname}]' },
        ];
        const fleet = (values: readonly string[], name: string) =>
          fleetOf(entries, {
            parameters: Object.fromEntries(values.map((value, index) => [`p${index}`, value])),
            properties: { texts: Object.fromEntries(values.map((value, index) => [`k${index}`, value])) },
            hostname: name,
          });
        // A host name with a space or a control character fails the node's shape: nothing else of
        // the node is checked then. Else a `$` is refused (a host name is letters, digits, - and .).
        const misshapen = [...hostname].some(unfitInHostname);
        const refused = [
          ...texts.flatMap((value, index) => (value.includes('\u0000') ? [`$.parameters.p${index}`] : [])),
          ...(misshapen || hostname.includes('$') ? ['$.nodes[0].hostname'] : []),
          ...(misshapen
            ? []
            : texts.flatMap((value, index) =>
                value.includes('\u0000') ? [`$.nodes[0].properties.texts.k${index}`] : [],
              )),
        ];
        const validation = validateFleet(fleet(Object.values(parameters) as string[], hostname));
        expect((validation.ok ? [] : validation.issues.map((issue) => issue.path)).sort()).toEqual(
          refused.sort(),
        );
        const carried = texts.map((value) => value.replaceAll('\u0000', ''));
        const carriedHostname =
          [...hostname]
            .filter((character) => !unfitInHostname(character))
            .join('')
            .replaceAll('$', '') || 'h';
        const written = agentWrites(fleet(carried, carriedHostname), slotsOf(entries));
        const expected = Object.fromEntries(
          [
            ...carried.flatMap((value, index) => [
              [`param${index}`, value],
              [`property${index}`, value],
            ]),
            ['hostname', `[${carriedHostname}]`],
          ].flatMap(([slot, value]) => [
            [`m${slot}`, value],
            [`p${slot}`, value],
          ]),
        );
        expect(written).toEqual(expected);
      }),
      { numRuns: 10 },
    );
  });
});
