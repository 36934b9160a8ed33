import { Inject, Injectable } from '@nestjs/common';
import { PROPERTY_NAME_PATTERN } from '@policygen/engine';
import type { Json, ValidationIssue } from '@policygen/engine';
import { alreadyExists, notFound, validationFailed } from '../http/api-errors';
import { jsonPath, rebaseIssues } from '../http/issue-paths';
import { Revisioned } from '../http/revisioned';
import { PARAMETER } from '@policygen/store';
import { ConfigStateService } from '../state/config-state.service';
import type { EntityRef, WriteRequest } from '../state/config-state.service';

export interface ParameterMutationResult {
  readonly revision: number;
  readonly name: string;
  readonly value: Json;
}

const NEW_PARAMETER_FIELDS = new Set(['name', 'value']);

/** Global parameters: name → any JSON value; each one's ETag is its own revision. */
@Injectable()
export class ParametersService {
  constructor(@Inject(ConfigStateService) private readonly state: ConfigStateService) {}

  list(): Revisioned<Readonly<Record<string, Json>>> {
    const { revision, index } = this.state.current;
    return new Revisioned(revision, index.parameters);
  }

  get(name: string): Revisioned<Json> {
    const { index } = this.state.current;
    const revision = this.state.revisionOf(parameterRef(name));
    if (!Object.hasOwn(index.parameters, name) || revision === undefined) throw notFound(`parameter ${name}`);
    return new Revisioned(revision, index.parameters[name] as Json);
  }

  /** Creates from `{name, value}`; `If-Match` is on the collection: the configuration's revision. */
  async create(body: unknown, request: WriteRequest): Promise<Revisioned<ParameterMutationResult>> {
    const { name, value } = newParameter(body);
    return this.write(name, value, request, jsonPath('value'), (parameters) => {
      if (Object.hasOwn(parameters, name)) throw alreadyExists(`parameter ${name}`);
    });
  }

  /** Replaces the value; the body is the value itself. */
  async replace(
    name: string,
    value: unknown,
    request: WriteRequest,
  ): Promise<Revisioned<ParameterMutationResult>> {
    return this.write(name, value, { ...request, entity: parameterRef(name) }, '$', (parameters) => {
      if (!Object.hasOwn(parameters, name)) throw notFound(`parameter ${name}`);
    });
  }

  async remove(name: string, request: WriteRequest): Promise<Revisioned<undefined>> {
    const committed = await this.state.mutate({
      ...request,
      entity: parameterRef(name),
      build: ({ index }) => {
        if (!Object.hasOwn(index.parameters, name)) throw notFound(`parameter ${name}`);
        return { delete: { parameters: [name] } };
      },
      refuse: (issues) => validationFailed(issues, `the deletion of parameter ${name}`),
    });
    return new Revisioned(committed.revision, undefined);
  }

  private async write(
    name: string,
    value: unknown,
    request: WriteRequest & { readonly entity?: EntityRef },
    valuePath: string,
    check: (parameters: Readonly<Record<string, Json>>) => void,
  ): Promise<Revisioned<ParameterMutationResult>> {
    const committed = await this.state.mutate({
      ...request,
      build: ({ index }) => {
        check(index.parameters);
        return { upsert: { parameters: { [name]: value } } };
      },
      refuse: (issues: readonly ValidationIssue[]) =>
        validationFailed(
          rebaseIssues(issues, jsonPath('upsert', 'parameters', name), valuePath),
          `parameter ${name}`,
        ),
    });
    const stored = committed.changeSet.upsert.parameters[name] as Json;
    return new Revisioned(committed.revision, { revision: committed.revision, name, value: stored });
  }
}

function parameterRef(name: string): EntityRef {
  return { kind: PARAMETER, key: name, name: `parameter ${name}` };
}

function newParameter(body: unknown): { name: string; value: unknown } {
  const issues: ValidationIssue[] = [];
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw validationFailed([{ path: '$', message: 'expected an object {name, value}' }], 'the parameter');
  }
  const record = body as Record<string, unknown>;
  for (const field of Object.keys(record))
    if (!NEW_PARAMETER_FIELDS.has(field)) issues.push({ path: jsonPath(field), message: 'unknown field' });
  const name = record['name'];
  if (typeof name !== 'string') issues.push({ path: '$.name', message: 'required: a string' });
  else if (!PROPERTY_NAME_PATTERN.test(name))
    issues.push({ path: '$.name', message: `must match ${PROPERTY_NAME_PATTERN.source}` });
  if (!('value' in record)) issues.push({ path: '$.value', message: 'required: any JSON value' });
  if (issues.length > 0) throw validationFailed(issues, 'the parameter');
  return { name: name as string, value: record['value'] };
}
