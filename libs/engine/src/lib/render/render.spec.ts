import { compileValid, directive, fleetFile, rule, technique } from '../../testing/builders';
import { generateNode } from '../generate/generate';
import { cfIdentifier, escapeCfString } from './cfengine';

const promises = [
  { type: 'reports', promiser: 'report {{value}}' },
  { type: 'files', promiser: '/tmp/{{value}}', attributes: { create: 'true' } },
  { type: 'vars', promiser: 'v_{{value}}', attributes: { string: '{{value}}' } },
  { type: 'meta', promiser: 'tags', attributes: { slist: ['a', '{{value}}'] } },
];

function bundleText(generation: string, values: string[]): string {
  const result = generateNode(
    compileValid(
      fleetFile({
        techniques: [technique('T', { promises, policyGeneration: generation })],
        directives: values.map((value, index) => directive(`d${index}`, 'T', { parameters: { value } })),
        rules: [
          rule(
            'r',
            values.map((_, index) => `d${index}`),
          ),
        ],
      }),
    ),
    'n1',
  );
  return result.files
    .filter((file) => file.path.includes('/T/1.0/'))
    .map((file) => file.content)
    .join('\n');
}

describe('CFEngine rendering (semantics.md §4)', () => {
  it('groups a merged policy by promise type in normal order, instances concatenated first', () => {
    const text = bundleText('merged', ['x', 'y']);
    const at = (needle: string) => text.indexOf(needle);
    expect(at('meta:')).toBeLessThan(at('vars:'));
    expect(at('vars:')).toBeLessThan(at('files:'));
    expect(at('files:')).toBeLessThan(at('reports:'));
    expect(at('"v_x"')).toBeLessThan(at('"v_y"'));
    expect(at('"v_y"')).toBeLessThan(at('"/tmp/x"'));
    expect(text.match(/^ {2}vars:$/gm)).toHaveLength(1);
  });

  it('escapes values into CFEngine strings', () => {
    expect(escapeCfString('a "quoted" \\ back')).toBe('a \\"quoted\\" \\\\ back');
    expect(bundleText('merged', ['say "hi" \\o/'])).toContain('string => "say \\"hi\\" \\\\o/"');
  });

  it('renders separated-with-parameters as one parameterised bundle and a call per directive', () => {
    const text = bundleText('separated-with-parameters', ['x', 'y']);
    expect(text).toMatch(/bundle agent T_d0_1_0_[0-9a-f]{8}\(value\)/);
    expect(text).toContain('"v_$(value)"');
    expect(text).toMatch(/usebundle => T_d0_1_0_[0-9a-f]{8}\("x"\);/);
    expect(text).toMatch(/usebundle => T_d1_1_0_[0-9a-f]{8}\("y"\);/);
  });

  it('maps ids to CFEngine identifiers one-to-one', () => {
    expect(cfIdentifier('generic_variable_definition')).toBe('generic_variable_definition');
    expect(cfIdentifier('a-b')).not.toBe(cfIdentifier('a_b'));
    expect(cfIdentifier('a-b')).toMatch(/^a_b_[0-9a-f]{8}$/);
  });

  it('lists system bundles first, then policies in order, in promises.cf', () => {
    const result = generateNode(
      compileValid(
        fleetFile({
          techniques: [technique('A'), technique('B')],
          directives: [directive('b', 'B'), directive('a', 'A')],
          rules: [rule('r', ['b', 'a'])],
        }),
      ),
      'n1',
    );
    expect(result.files.find((f) => f.path === 'rules/cfengine-community/promises.cf')?.content).toContain(
      'bundlesequence => { "policygen_node", "policygen_properties", "node", "A", "B" };',
    );
    expect(result.files.find((f) => f.path.endsWith('rudder-directives.csv'))?.content).toBe(
      '"a","r","A","1.0","A"\n"b","r","B","1.0","B"\n',
    );
  });

  it('hashes every file but the timestamp: time and revision do not change the hash, content does', () => {
    const input = fleetFile({
      techniques: [technique('A')],
      directives: [directive('a', 'A')],
      rules: [rule('r', ['a'])],
    });
    const first = generateNode(compileValid(input), 'n1', { generatedAt: 1, revision: 1 });
    const later = generateNode(compileValid(input), 'n1', { generatedAt: 2, revision: 7 });
    expect(later.hash).toBe(first.hash);
    expect(later.files.find((f) => f.path.endsWith('rudder-promises-generated'))?.content).toBe('2\n');
    expect(later.manifest?.configRevision).toBe(7);
    const changed = fleetFile({
      techniques: [technique('A')],
      directives: [directive('a', 'A', { parameters: { value: 'other' } })],
      rules: [rule('r', ['a'])],
    });
    expect(generateNode(compileValid(changed), 'n1').hash).not.toBe(first.hash);
    expect(first.hash).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('a notified policy runs its refresh promises when the notifier repairs something', () => {
    const result = generateNode(
      compileValid(
        fleetFile({
          techniques: [
            technique('A', {
              promises: [{ type: 'files', promiser: '/tmp/a', attributes: { create: 'true' } }],
            }),
            technique('B', { refresh: [{ type: 'commands', promiser: '/bin/true' }] }),
          ],
          directives: [directive('a', 'A', { notify: ['b'] }), directive('b', 'B')],
          rules: [rule('r', ['a', 'b'])],
        }),
      ),
      'n1',
    );
    const text = result.files.map((f) => f.content).join('\n');
    // A's repairs trigger B's refresh; its failures skip B (semantics.md §3.6).
    expect(text).toContain('classes => policygen_classes("policygen_repaired_A", "policygen_failed_A")');
    expect(text).toContain('    (policygen_repaired_A).!(policygen_failed_A)::\n      "/bin/true";');
    expect(text).toContain(
      '    policygen_failed_A::\n      "Directive[b]: Skipping because of failed dependencies (Directive[a] failed)";',
    );
  });
});
