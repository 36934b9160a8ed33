import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import { Journal, parseJournal } from './journal';

describe('Journal', () => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'journal-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  const record = fc.record({ n: fc.integer(), text: fc.string({ unit: 'grapheme', maxLength: 20 }) });

  it('gives back, from a file cut anywhere or ended by zeros, exactly the records wholly before the cut', () => {
    fc.assert(
      fc.property(
        fc.array(record, { minLength: 1, maxLength: 8 }),
        fc.nat(),
        fc.nat({ max: 64 }),
        (records, cutAt, zeros) => {
          const lines = records.map((each) => {
            const text = JSON.stringify(each);
            return Buffer.from(`${crc32Hex(text)} ${text}\n`);
          });
          const whole = Buffer.concat(lines);
          const cut = cutAt % (whole.length + 1);
          const content = Buffer.concat([whole.subarray(0, cut), Buffer.alloc(zeros)]);
          let ends = 0;
          const kept = lines.filter((line) => (ends += line.length) <= cut).length;
          const parsed = parseJournal(content, 'journal');
          expect(parsed.records).toEqual(records.slice(0, kept));
          expect(parsed.complete).toBe(lines.slice(0, kept).reduce((sum, line) => sum + line.length, 0));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuses a damaged record that complete ones follow, naming its line', () => {
    const good = (n: number): string => `${crc32Hex(JSON.stringify({ n }))} ${JSON.stringify({ n })}\n`;
    const damaged = Buffer.from(`${good(1)}${good(2).replace('2', '3')}${good(4)}`);
    expect(() => parseJournal(damaged, 'changes.journal')).toThrow(
      /changes\.journal:2: its checksum does not match, and complete records follow it/,
    );
  });

  it('repairs a torn tail at opening, says so, and appends after the last complete record', async () => {
    const file = join(directory, 'a.journal');
    const first = await Journal.open<{ n: number }>(file);
    expect(first.recovery).toEqual({ records: 0, tornBytes: 0 });
    await first.journal.append({ n: 1 }, { durable: true });
    await first.journal.append({ n: 2 }, { durable: false });
    await first.journal.close();
    const intact = statSync(file).size;
    writeFileSync(file, Buffer.concat([readFileSync(file), Buffer.from('0badf00d {"n":')]));

    const second = await Journal.open<{ n: number }>(file);
    expect(second.records).toEqual([{ n: 1 }, { n: 2 }]);
    expect(second.recovery).toEqual({ records: 2, tornBytes: 14 });
    expect(statSync(file).size).toBe(intact);
    await second.journal.append({ n: 3 }, { durable: true });
    await second.journal.close();
    expect((await Journal.open<{ n: number }>(file)).records).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  });
});

function crc32Hex(text: string): string {
  return crc32(text).toString(16).padStart(8, '0');
}
