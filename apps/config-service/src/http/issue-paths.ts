import type { ValidationIssue } from '@policygen/engine';

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** A JSON path in the validator's notation: `$.upsert.parameters["odd key"][0]`. */
export function jsonPath(...segments: readonly (string | number)[]): string {
  return segments.reduce<string>((path, segment) => {
    if (typeof segment === 'number') return `${path}[${segment}]`;
    return IDENTIFIER.test(segment) ? `${path}.${segment}` : `${path}[${JSON.stringify(segment)}]`;
  }, '$');
}

/**
 * Moves issue paths from where the validator saw the value (inside the change set the request
 * became) to where the client wrote it: `$.upsert.directives[0].name` → `$.name`.
 */
export function rebaseIssues(
  issues: readonly ValidationIssue[],
  from: string,
  to: string,
): ValidationIssue[] {
  return issues.map((issue) => {
    const rest = issue.path.slice(from.length);
    const under =
      issue.path.startsWith(from) && (rest === '' || rest.startsWith('.') || rest.startsWith('['));
    return under ? { ...issue, path: `${to}${rest}` } : issue;
  });
}

/** Zod's issues in the API's notation: each with the JSON path of what the client wrote. */
export function requestIssues(
  issues: readonly { readonly path: readonly PropertyKey[]; readonly message: string }[],
): ValidationIssue[] {
  return issues.map((issue) => ({
    path: jsonPath(...issue.path.map((segment) => (typeof segment === 'symbol' ? String(segment) : segment))),
    message: issue.message,
  }));
}
