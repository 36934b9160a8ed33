import { readFile } from 'node:fs/promises';
import { InputError, describeFsError } from '../errors';

/** One line of a change file: a change set (fleet-format.md), and where it came from. */
export interface ChangeLine {
  readonly line: number;
  readonly changeSet: unknown;
}

/** Reads a JSON-lines change file; blank lines are skipped, a line that is not JSON is an input error. */
export async function readChanges(file: string): Promise<ChangeLine[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new InputError(`cannot read change file ${file}: ${describeFsError(error)}`);
  }
  const changes: ChangeLine[] = [];
  text.split('\n').forEach((content, index) => {
    if (content.trim() === '') return;
    try {
      changes.push({ line: index + 1, changeSet: JSON.parse(content) });
    } catch (error) {
      throw new InputError(`${file}:${index + 1}: not valid JSON: ${(error as Error).message}`);
    }
  });
  return changes;
}
