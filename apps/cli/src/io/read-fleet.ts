import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { compileFleet, loadFleet } from '@policygen/engine';
import type { CompiledFleet, Fleet, FleetFormat } from '@policygen/engine';
import { FleetValidationError, InputError, describeFsError } from '../errors';

const FORMATS: Readonly<Record<string, FleetFormat>> = { '.json': 'json', '.yaml': 'yaml', '.yml': 'yaml' };

/** The format of a fleet file, by its extension (fleet-format.md). */
export function fleetFormatOf(file: string): FleetFormat {
  const format = FORMATS[extname(file).toLowerCase()];
  if (!format) throw new InputError(`${file}: a fleet file must end in .json, .yaml or .yml`);
  return format;
}

/** Reads, parses and validates a fleet file; an unreadable or invalid file is an input error. */
export async function readFleet(file: string): Promise<Fleet> {
  const format = fleetFormatOf(file);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new InputError(`cannot read fleet file ${file}: ${describeFsError(error)}`);
  }
  const result = loadFleet(text, format);
  if (!result.ok) throw new FleetValidationError(file, result.issues);
  return result.fleet;
}

export async function readCompiledFleet(file: string): Promise<CompiledFleet> {
  return compileFleet(await readFleet(file));
}

/** The given node ids, once each, in order; any id the fleet lacks is an input error. */
export function checkNodeIds(compiled: CompiledFleet, nodeIds: readonly string[]): string[] {
  const known = new Set(compiled.nodeIds);
  const unknown = nodeIds.filter((id) => !known.has(id));
  if (unknown.length > 0) {
    const list = [...new Set(unknown)].join(', ');
    throw new InputError(`unknown node${unknown.length > 1 ? 's' : ''}: ${list} (not in the fleet)`);
  }
  return [...new Set(nodeIds)];
}
