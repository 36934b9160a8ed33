import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stagingNameOf, writeFileDurably } from './durable-files';

describe('writeFileDurably', () => {
  let directory: string;
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'policygen-durable-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it('replaces a file whole, with the mode asked for, in a folder it creates', () => {
    const file = join(directory, 'data', 'secrets.json');
    writeFileDurably(file, 'one', { mode: 0o600 });
    writeFileDurably(file, 'two', { mode: 0o600 });
    expect(readFileSync(file, 'utf8')).toBe('two');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(directory, 'data'))).toEqual(['secrets.json']);
  });

  it('writes over a staging file a crash left behind', () => {
    const file = join(directory, 'relays.json');
    writeFileSync(stagingNameOf(file), 'half a wri');
    writeFileDurably(file, '[]');
    expect(readFileSync(file, 'utf8')).toBe('[]');
    expect(readdirSync(directory)).toEqual(['relays.json']);
  });
});
