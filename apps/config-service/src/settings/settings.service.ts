import { Inject, Injectable } from '@nestjs/common';
import { settingsSchema } from '@policygen/engine';
import type { Settings } from '@policygen/engine';
import { validationFailed } from '../http/api-errors';
import { jsonPath, rebaseIssues } from '../http/issue-paths';
import { Revisioned } from '../http/revisioned';
import { SETTINGS } from '@policygen/store';
import { ConfigStateService } from '../state/config-state.service';
import type { EntityRef, WriteRequest } from '../state/config-state.service';

/** The settings are one entity: their ETag is the revision that last wrote them (0: never written). */
const SETTINGS_ENTITY: EntityRef = { kind: SETTINGS, key: SETTINGS, name: 'the settings' };

export interface SettingsMutationResult {
  readonly revision: number;
  readonly settings: Settings;
}

/** The fleet's settings: replaced whole (absent fields take their defaults) or merged. */
@Injectable()
export class SettingsService {
  constructor(@Inject(ConfigStateService) private readonly state: ConfigStateService) {}

  get(): Revisioned<Settings> {
    const { index } = this.state.current;
    return new Revisioned(this.state.revisionOf(SETTINGS_ENTITY) ?? 0, index.settings);
  }

  replace(body: unknown, request: WriteRequest): Promise<Revisioned<SettingsMutationResult>> {
    const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
    return this.write(isObject ? { ...settingsSchema.parse({}), ...body } : body, request);
  }

  merge(body: unknown, request: WriteRequest): Promise<Revisioned<SettingsMutationResult>> {
    return this.write(body, request);
  }

  private async write(settings: unknown, request: WriteRequest): Promise<Revisioned<SettingsMutationResult>> {
    let before = this.state.current.index.settings;
    const committed = await this.state.mutate({
      ...request,
      entity: SETTINGS_ENTITY,
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
