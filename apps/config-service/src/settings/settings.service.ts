import { Inject, Injectable } from '@nestjs/common';
import { settingsSchema } from '@policygen/engine';
import type { Settings } from '@policygen/engine';
import { validationFailed } from '../http/api-errors';
import { jsonPath, rebaseIssues } from '../http/issue-paths';
import { Revisioned } from '../http/revisioned';
import { ConfigStateService } from '../state/config-state.service';

export interface SettingsMutationResult {
  readonly revision: number;
  readonly settings: Settings;
}

/** The fleet's settings: replaced whole (absent fields take their defaults) or merged. */
@Injectable()
export class SettingsService {
  constructor(@Inject(ConfigStateService) private readonly state: ConfigStateService) {}

  get(): Revisioned<Settings> {
    const { revision, index } = this.state.current;
    return new Revisioned(revision, index.settings);
  }

  replace(body: unknown, ifMatch: string | undefined): Promise<Revisioned<SettingsMutationResult>> {
    const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
    return this.write(isObject ? { ...settingsSchema.parse({}), ...body } : body, ifMatch);
  }

  merge(body: unknown, ifMatch: string | undefined): Promise<Revisioned<SettingsMutationResult>> {
    return this.write(body, ifMatch);
  }

  private async write(
    settings: unknown,
    ifMatch: string | undefined,
  ): Promise<Revisioned<SettingsMutationResult>> {
    let before = this.state.current.index.settings;
    const committed = await this.state.mutate({
      ifMatch,
      build: ({ index }) => {
        before = index.settings;
        return { upsert: { settings } };
      },
      refuse: (issues) =>
        validationFailed(rebaseIssues(issues, jsonPath('upsert', 'settings'), '$'), 'the settings'),
    });
    const after = { ...before, ...committed.changeSet.upsert.settings };
    return new Revisioned(committed.revision, { revision: committed.revision, settings: after });
  }
}
