import type { z } from 'zod';
import type { PathSegment } from './json-path';
import { formatJsonPath } from './json-path';
import type { ValidationIssue } from './validate';

/** Turns zod's issues into ours: one per unknown field, the closest branch of a union. */
export function toValidationIssues(
  issues: readonly z.core.$ZodIssue[],
  prefix: readonly PathSegment[],
): ValidationIssue[] {
  return issues.flatMap((issue) => convert(issue, prefix));
}

function convert(issue: z.core.$ZodIssue, prefix: readonly PathSegment[]): ValidationIssue[] {
  const path = [
    ...prefix,
    ...issue.path.map((segment) => (typeof segment === 'symbol' ? String(segment) : segment)),
  ];
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => ({ path: formatJsonPath([...path, key]), message: 'unknown field' }));
    case 'invalid_union': {
      // Report the alternative whose shape the input has (the author's intent), closest first.
      const shaped = issue.errors
        .filter((branch) => branch.length > 0 && branch.every((inner) => !isShapeMismatch(inner)))
        .sort((a, b) => a.length - b.length);
      const closest = shaped[0];
      if (!closest) return [{ path: formatJsonPath(path), message: describeUnion(issue) }];
      return closest.flatMap((inner) => convert(inner, path));
    }
    case 'invalid_type':
      return [{ path: formatJsonPath(path), message: `expected ${issue.expected}${received(issue.input)}` }];
    case 'invalid_value':
      return [
        {
          path: formatJsonPath(path),
          message: `must be one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}${received(issue.input)}`,
        },
      ];
    default:
      return [{ path: formatJsonPath(path), message: issue.message }];
  }
}

/** A problem at the union's own level that says "this is not that alternative at all". */
function isShapeMismatch(issue: z.core.$ZodIssue): boolean {
  if (issue.code === 'unrecognized_keys') return issue.path.length === 0;
  if (issue.code === 'invalid_type') return issue.path.length <= 1;
  return false;
}

function describeUnion(issue: z.core.$ZodIssueInvalidUnion): string {
  const expected = new Set(
    issue.errors.flatMap((branch) =>
      branch.flatMap((inner) => (inner.code === 'invalid_type' ? [inner.expected] : [])),
    ),
  );
  return expected.size > 0 ? `expected ${[...expected].join(' or ')}${received(issue.input)}` : issue.message;
}

function received(input: unknown): string {
  if (input === undefined) return ', but it is missing';
  if (input === null) return ', got null';
  if (Array.isArray(input)) return ', got an array';
  if (typeof input === 'object') return ', got an object';
  return `, got ${typeof input} ${JSON.stringify(input)}`;
}
