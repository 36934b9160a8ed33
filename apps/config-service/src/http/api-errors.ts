import { HttpException, HttpStatus } from '@nestjs/common';
import type { ValidationIssue } from '@policygen/engine';

/** The error bodies of the API: `{statusCode, error, message}` plus details such as `issues`. */
function apiError(status: HttpStatus, message: string, details: Record<string, unknown> = {}): HttpException {
  const error = HTTP_REASONS[status] ?? 'Error';
  return new HttpException({ statusCode: status, error, message, ...details }, status);
}

const HTTP_REASONS: Partial<Record<HttpStatus, string>> = {
  [HttpStatus.BAD_REQUEST]: 'Bad Request',
  [HttpStatus.NOT_FOUND]: 'Not Found',
  [HttpStatus.CONFLICT]: 'Conflict',
  [HttpStatus.PRECONDITION_FAILED]: 'Precondition Failed',
  [HttpStatus.SERVICE_UNAVAILABLE]: 'Service Unavailable',
};

export function validationFailed(issues: readonly ValidationIssue[], what: string): HttpException {
  const count = issues.length === 1 ? '1 issue' : `${issues.length} issues`;
  return apiError(HttpStatus.BAD_REQUEST, `${what} is invalid (${count})`, { issues });
}

export function notFound(what: string): HttpException {
  return apiError(HttpStatus.NOT_FOUND, `${what} does not exist`);
}

export function alreadyExists(what: string): HttpException {
  return apiError(HttpStatus.CONFLICT, `${what} already exists`);
}

export function stillReferenced(what: string, issues: readonly ValidationIssue[]): HttpException {
  return apiError(HttpStatus.CONFLICT, `${what} cannot be deleted: it is still referenced`, { issues });
}

/**
 * `If-Match` names another revision than the current one: the configuration's, or, with `entity`,
 * that entity's own (undefined: the entity does not exist).
 */
export function preconditionFailed(
  ifMatch: string,
  revision: number | undefined,
  entity?: string,
): HttpException {
  if (entity === undefined)
    return apiError(
      HttpStatus.PRECONDITION_FAILED,
      `If-Match ${ifMatch} does not match the current revision ${revision}`,
      { revision },
    );
  if (revision === undefined)
    return apiError(
      HttpStatus.PRECONDITION_FAILED,
      `If-Match ${ifMatch} does not match: ${entity} does not exist`,
    );
  return apiError(
    HttpStatus.PRECONDITION_FAILED,
    `If-Match ${ifMatch} does not match the revision of ${entity}, ${revision}`,
    { revision },
  );
}

export function unavailable(message: string): HttpException {
  return apiError(HttpStatus.SERVICE_UNAVAILABLE, message);
}

/** A query or path parameter that is not what the endpoint takes; the message names it. */
export function badParameter(name: string, expected: string, got: string): HttpException {
  return apiError(HttpStatus.BAD_REQUEST, `${name} must be ${expected}, not ${JSON.stringify(got)}`, {
    issues: [{ path: name, message: `must be ${expected}` }],
  });
}
