import { Inject, Injectable } from '@nestjs/common';
import { loadFleet, validateFleet } from '@policygen/engine';
import type { Fleet } from '@policygen/engine';
import { validationFailed } from '../http/api-errors';
import { jsonPath, rebaseIssues } from '../http/issue-paths';
import { Revisioned } from '../http/revisioned';
import { ConfigStateService } from '../state/config-state.service';
import { replacementChangeSet } from './replacement-change-set';

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

  async applyChangeSet(changeSet: unknown, ifMatch: string | undefined): Promise<Revisioned<CommitResult>> {
    const committed = await this.state.mutate({
      ifMatch,
      build: () => changeSet,
      refuse: (issues) => validationFailed(issues, 'the change set'),
    });
    return answer(committed);
  }

  /** Replaces the whole configuration with the file's, in one revision. */
  async importFleet(file: FleetFileBody, ifMatch: string | undefined): Promise<Revisioned<CommitResult>> {
    const validated = 'yaml' in file ? loadFleet(file.yaml, 'yaml') : validateFleet(file.json);
    if (!validated.ok) throw validationFailed(validated.issues, 'the fleet file');
    const committed = await this.state.mutate({
      ifMatch,
      build: ({ index }) => replacementChangeSet(index, validated.fleet),
      // The file is valid on its own, so the engine has nothing more to say; were it to, its paths are the file's.
      refuse: (issues) => validationFailed(rebaseIssues(issues, jsonPath('upsert'), '$'), 'the fleet file'),
    });
    return answer(committed);
  }
}

function answer(committed: { revision: number; committedAt: Date }): Revisioned<CommitResult> {
  return new Revisioned(committed.revision, {
    revision: committed.revision,
    committedAt: committed.committedAt.toISOString(),
  });
}
