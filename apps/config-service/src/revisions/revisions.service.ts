import { Inject, Injectable } from '@nestjs/common';
import type { ParsedChangeSet } from '@policygen/engine';
import { changedEntities } from '@policygen/store';
import type { ChangeCounts, ChangedEntities, ConfigStore, RevisionRecord } from '@policygen/store';
import { CONFIG_STORE } from '../app/tokens';
import { badParameter, notFound } from '../http/api-errors';

export const DEFAULT_REVISIONS_PAGE = 50;
export const MAX_REVISIONS_PAGE = 1_000;

/** One revision of the audit trail, as the API shows it. */
export interface RevisionView {
  readonly revision: number;
  readonly committedAt: string;
  readonly author: string | null;
  readonly reason: string | null;
  readonly counts: ChangeCounts;
}

/** A page of the audit trail, oldest first; `next` is the `after` of the next page, null after the last. */
export interface RevisionsPage {
  readonly revisions: readonly RevisionView[];
  readonly next: number | null;
}

/** One revision with what it changed: the entities by kind and key, and its change set. */
export interface RevisionDetail extends RevisionView {
  readonly changes: ChangedEntities;
  readonly changeSet: ParsedChangeSet;
}

/** The audit trail: every revision, who made it, when, why and what it changed, read from the change log. */
@Injectable()
export class RevisionsService {
  constructor(@Inject(CONFIG_STORE) private readonly store: ConfigStore) {}

  async page(afterParameter: string | undefined, limitParameter: string | undefined): Promise<RevisionsPage> {
    const after = integerParameter('after', afterParameter, 0, Number.MAX_SAFE_INTEGER) ?? 0;
    const limit = integerParameter('limit', limitParameter, 1, MAX_REVISIONS_PAGE) ?? DEFAULT_REVISIONS_PAGE;
    const records = await this.store.revisions(after, limit);
    const last = records.at(-1);
    return { revisions: records.map(viewOf), next: records.length === limit && last ? last.revision : null };
  }

  async one(revisionParameter: string): Promise<RevisionDetail> {
    const revision = integerParameter('revision', revisionParameter, 1, Number.MAX_SAFE_INTEGER) as number;
    const committed = await this.store.revision(revision);
    if (!committed) throw notFound(`revision ${revision}`);
    return {
      ...viewOf(committed),
      changes: changedEntities(committed.changeSet),
      changeSet: committed.changeSet,
    };
  }
}

function viewOf(record: RevisionRecord): RevisionView {
  return {
    revision: record.revision,
    committedAt: record.committedAt.toISOString(),
    author: record.author,
    reason: record.reason,
    counts: record.counts,
  };
}

/** A decimal integer within bounds, or undefined when absent; anything else is a 400 naming the parameter. */
function integerParameter(
  name: string,
  text: string | undefined,
  min: number,
  max: number,
): number | undefined {
  if (text === undefined) return undefined;
  const value = /^\d{1,16}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max)
    throw badParameter(
      name,
      max === Number.MAX_SAFE_INTEGER ? `an integer of at least ${min}` : `an integer from ${min} to ${max}`,
      text,
    );
  return value;
}
