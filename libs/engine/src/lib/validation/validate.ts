import type { Fleet } from '../model/fleet';

/** One problem of the input, at a JSON path like `$.directives[2].technique`. */
export interface ValidationIssue {
  readonly path: string;
  readonly message: string;
}

export type ValidationResult =
  | { readonly ok: true; readonly fleet: Fleet }
  | { readonly ok: false; readonly issues: readonly ValidationIssue[] };

export type FleetFormat = 'json' | 'yaml';

/** Parses fleet text (JSON or YAML) and validates it; syntax errors are issues too. */
export function loadFleet(_text: string, _format: FleetFormat): ValidationResult {
  throw new Error('not implemented yet');
}

/** Validates a parsed fleet file in one pass, reporting every issue with its JSON path. */
export function validateFleet(_input: unknown): ValidationResult {
  throw new Error('not implemented yet');
}
