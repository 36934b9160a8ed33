import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import fc from 'fast-check';
import { arbitraryFleet } from '../../testing/fleet-arbitrary';
import { fleetFile, technique } from '../../testing/builders';
import { validateFleet } from '../validation/validate';
import { fleetJsonSchema } from './fleet-schema';

const WRITTEN = join(__dirname, '..', '..', '..', 'schemas', 'fleet.schema.json');
const EXAMPLES = join(__dirname, '..', '..', '..', '..', '..', '..', 'shared', 'examples');

const validate = new Ajv2020({ allErrors: true, strict: false }).compile(fleetJsonSchema());

describe('the fleet file JSON Schema', () => {
  it('is the file written in libs/engine/schemas (npm run schemas writes it again)', () => {
    expect(JSON.parse(readFileSync(WRITTEN, 'utf8'))).toEqual(fleetJsonSchema());
  });

  it('accepts the shared example fleets', () => {
    const files = readdirSync(EXAMPLES).filter((name) => name.endsWith('.fleet.json'));
    expect(files.length).toBeGreaterThan(0);
    for (const name of files) {
      const fleet: unknown = JSON.parse(readFileSync(join(EXAMPLES, name), 'utf8'));
      expect({ name, valid: validate(fleet), errors: validate.errors ?? null }).toEqual({
        name,
        valid: true,
        errors: null,
      });
    }
  });

  it('accepts every fleet the validator accepts (fast-check)', () => {
    fc.assert(
      fc.property(arbitraryFleet(), (fleet) => {
        if (!validateFleet(fleet).ok) return;
        expect(validate(fleet) ? null : validate.errors).toBeNull();
      }),
      { numRuns: 150 },
    );
  });

  it.each([
    [{ settings: { policyMode: 'dry-run' } }, '/settings/policyMode'],
    [{ settings: { parameterInheritModes: { dns: 'mxo' } } }, '/settings/parameterInheritModes/dns'],
    [{ nodes: [{ id: 'n1', hostname: 'h', policyMode: 'AUDIT' }] }, '/nodes/0/policyMode'],
    [{ groups: [{ id: 'g', name: 'g', inheritModes: { a: 'mo' } }] }, '/groups/0/inheritModes/a'],
    [{ techniques: [technique('t', { policyGeneration: 'mergd' })] }, '/techniques/0/policyGeneration'],
    [{ nodes: [{ id: 'n1', hostname: 'h', colour: 'blue' }] }, '/nodes/0'],
  ])('refuses a wrong value where the validator does too: %j at %s', (parts, where) => {
    const fleet = fleetFile(parts);
    expect(validate(fleet)).toBe(false);
    expect(validate.errors?.map((error) => error.instancePath)).toContain(where);
    expect(validateFleet(fleet).ok).toBe(false);
  });
});
