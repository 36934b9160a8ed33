import { Inject, Injectable } from '@nestjs/common';
import { FLEET_COLLECTIONS } from '@policygen/engine';
import type { ParsedChangeSet, ValidationIssue } from '@policygen/engine';
import { alreadyExists, notFound, stillReferenced, validationFailed } from '../http/api-errors';
import { jsonPath, rebaseIssues } from '../http/issue-paths';
import { Revisioned } from '../http/revisioned';
import { ConfigStateService } from '../state/config-state.service';
import type { WriteRequest } from '../state/config-state.service';
import type { EntityKey, EntityKind } from './entity-kinds';
import { describe, entityRef, keyOf } from './entity-kinds';

/** What a create or replace answers: the new revision and the entity as stored (defaults applied). */
export interface EntityMutationResult {
  readonly revision: number;
  readonly entity: unknown;
}

/**
 * List, get, create, replace and delete for every entity collection, each write one change set. An
 * entity's ETag is its own revision, and `If-Match` on it compares with that: editing one entity
 * never fails because another changed. A collection's is the configuration's revision.
 */
@Injectable()
export class EntityService {
  constructor(@Inject(ConfigStateService) private readonly state: ConfigStateService) {}

  list(kind: EntityKind): Revisioned<readonly object[]> {
    const { revision, index } = this.state.current;
    return new Revisioned(revision, kind.list(index));
  }

  get(kind: EntityKind, key: EntityKey): Revisioned<object> {
    const entity = kind.find(this.state.current.index, key);
    const revision = this.state.revisionOf(entityRef(kind, key));
    if (!entity || revision === undefined) throw notFound(describe(kind, key));
    return new Revisioned(revision, entity);
  }

  async create(
    kind: EntityKind,
    body: unknown,
    request: WriteRequest,
  ): Promise<Revisioned<EntityMutationResult>> {
    const committed = await this.state.mutate({
      ...request,
      build: ({ index }) => {
        // The key after defaults (a relationship's kind defaults to ->); a body that does not
        // parse is the validator's to report.
        const parsed = FLEET_COLLECTIONS[kind.collection].safeParse(body);
        const key = parsed.success ? keyOf(kind, parsed.data) : undefined;
        if (key && kind.find(index, key)) throw alreadyExists(describe(kind, key));
        return { upsert: { [kind.collection]: [body] } };
      },
      refuse: (issues) => this.invalidEntity(kind, issues),
    });
    return upserted(kind, committed);
  }

  async replace(
    kind: EntityKind,
    key: EntityKey,
    body: unknown,
    request: WriteRequest,
  ): Promise<Revisioned<EntityMutationResult>> {
    const committed = await this.state.mutate({
      ...request,
      entity: entityRef(kind, key),
      build: ({ index }) => {
        if (!kind.find(index, key)) throw notFound(describe(kind, key));
        return { upsert: { [kind.collection]: [withKey(kind, key, body)] } };
      },
      refuse: (issues) => this.invalidEntity(kind, issues),
    });
    return upserted(kind, committed);
  }

  async remove(kind: EntityKind, key: EntityKey, request: WriteRequest): Promise<Revisioned<undefined>> {
    const committed = await this.state.mutate({
      ...request,
      entity: entityRef(kind, key),
      build: ({ index }) => {
        if (!kind.find(index, key)) throw notFound(describe(kind, key));
        return { delete: { [kind.collection]: [kind.deletion(key)] } };
      },
      refuse: (issues) =>
        stillReferenced(
          describe(kind, key),
          rebaseIssues(issues, jsonPath('delete', kind.collection, 0), '$'),
        ),
    });
    return new Revisioned(committed.revision, undefined);
  }

  private invalidEntity(kind: EntityKind, issues: readonly ValidationIssue[]): Error {
    return validationFailed(
      rebaseIssues(issues, jsonPath('upsert', kind.collection, 0), '$'),
      `the ${kind.singular}`,
    );
  }
}

/**
 * The body of a replace, its key taken from the URL: a key field the body leaves out is filled in,
 * one that differs is refused.
 */
function withKey(kind: EntityKind, key: EntityKey, body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const record = body as Record<string, unknown>;
  const issues = kind.keyFields.flatMap((field) =>
    record[field] === undefined || record[field] === key[field]
      ? []
      : [{ path: jsonPath(field), message: `must be ${JSON.stringify(key[field])}, as in the URL` }],
  );
  if (issues.length > 0) throw validationFailed(issues, `the ${kind.singular}`);
  return { ...record, ...key };
}

/** The answer to a create or replace: the new revision and the entity as committed, defaults applied. */
function upserted(
  kind: EntityKind,
  committed: { readonly revision: number; readonly changeSet: ParsedChangeSet },
): Revisioned<EntityMutationResult> {
  const entity = committed.changeSet.upsert[kind.collection][0];
  return new Revisioned(committed.revision, { revision: committed.revision, entity });
}
