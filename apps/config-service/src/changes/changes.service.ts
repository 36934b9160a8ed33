import { Inject, Injectable } from '@nestjs/common';
import { compareCodeUnits, loadFleet, validateFleet } from '@policygen/engine';
import type { Fleet } from '@policygen/engine';
import type { FleetPlacement } from '@policygen/store';
import { placementOf } from '@policygen/store';
import { preconditionFailed, validationFailed } from '../http/api-errors';
import { ifMatchAccepts } from '../http/if-match';
import { Revisioned } from '../http/revisioned';
import { checkedReason, REASON_HEADER } from '../http/reason';
import { ConfigStateService } from '../state/config-state.service';
import type { WriteRequest } from '../state/config-state.service';
import type { ChangePreview } from './change-preview';
import { previewChange } from './change-preview';

export interface CommitResult {
  readonly revision: number;
  readonly committedAt: string;
}

/** A fleet file as a request carries it: parsed JSON, or YAML text. */
export type FleetFileBody = { readonly json: unknown } | { readonly yaml: string };

/** Whole-configuration operations: a batch of changes, import and export of a fleet file. */
@Injectable()
export class ChangesService {
  constructor(@Inject(ConfigStateService) private readonly state: ConfigStateService) {}

  revision(): Revisioned<{ revision: number }> {
    const { revision } = this.state.current;
    return new Revisioned(revision, { revision });
  }

  exportFleet(): Revisioned<Fleet> {
    const { revision, index } = this.state.current;
    return new Revisioned(revision, index.toFleet());
  }

  /** Where each node and relay is served from: all the distribution reads of the configuration. */
  exportPlacement(): Revisioned<FleetPlacement> {
    const { revision, index } = this.state.current;
    // Only the two collections it gives, in the export's order: `toFleet` would sort them all.
    const byId = <T extends { readonly id: string }>(entities: ReadonlyMap<string, T>): T[] =>
      [...entities.values()].sort((a, b) => compareCodeUnits(a.id, b.id));
    return new Revisioned(revision, placementOf({ nodes: byId(index.nodes), relays: byId(index.relays) }));
  }

  /** Commits a change set; `body` may say why in a `reason` field beside `upsert` and `delete`. */
  async applyChangeSet(body: unknown, request: WriteRequest): Promise<Revisioned<CommitResult>> {
    const { changeSet, reason } = withoutReason(body, request.reason);
    const committed = await this.state.mutate({
      ...request,
      reason,
      build: () => changeSet,
      refuse: (issues) => validationFailed(issues, 'the change set'),
    });
    return answer(committed);
  }

  /**
   * What committing the change set would do, committing nothing: refused as the commit would be
   * (400, 412), else the affected nodes, the failing ones and bundle diffs (`previewChange`).
   */
  async previewChangeSet(body: unknown, request: WriteRequest): Promise<Revisioned<ChangePreview>> {
    const { changeSet } = withoutReason(body, request.reason);
    // Between two commits: the preview reads the index for a while, a group commit writes it.
    return this.state.readConsistent((current) => {
      if (!ifMatchAccepts(request.ifMatch, current.revision))
        throw preconditionFailed(request.ifMatch ?? '', current.revision);
      const outcome = previewChange(current, changeSet);
      if (!outcome.ok) throw validationFailed(outcome.issues, 'the change set');
      return new Revisioned(current.revision, outcome.preview);
    });
  }

  /** Replaces the whole configuration with the file's, in one revision. */
  async importFleet(file: FleetFileBody, request: WriteRequest): Promise<Revisioned<CommitResult>> {
    const validated = 'yaml' in file ? loadFleet(file.yaml, 'yaml') : validateFleet(file.json);
    if (!validated.ok) throw validationFailed(validated.issues, 'the fleet file');
    const committed = await this.state.mutate({
      ...request,
      replaceWith: validated.fleet,
    });
    return answer(committed);
  }
}

/** The body field that says why a change set is committed: not part of the change set, which has only its sections. */
const REASON_FIELD = 'reason';

/**
 * The change set of a `/changes` body, and the reason of the body or the header: a reason given in
 * both is refused, since one of them would be lost.
 */
export function withoutReason(
  body: unknown,
  headerReason: string | null,
): { readonly changeSet: unknown; readonly reason: string | null } {
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !Object.hasOwn(body, REASON_FIELD))
    return { changeSet: body, reason: headerReason };
  const { [REASON_FIELD]: given, ...changeSet } = body as Record<string, unknown>;
  const reason = checkedReason(given, `$.${REASON_FIELD}`);
  if (reason !== null && headerReason !== null)
    throw validationFailed(
      [{ path: `$.${REASON_FIELD}`, message: `give the reason once: here or in ${REASON_HEADER}, not both` }],
      'the reason',
    );
  return { changeSet, reason: reason ?? headerReason };
}

function answer(committed: { revision: number; committedAt: Date }): Revisioned<CommitResult> {
  return new Revisioned(committed.revision, {
    revision: committed.revision,
    committedAt: committed.committedAt.toISOString(),
  });
}
