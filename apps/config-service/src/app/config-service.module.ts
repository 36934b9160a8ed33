import { TOPICS } from '@policygen/events';
import type { ServiceShellOptions } from '@policygen/service-kit';
import { ServiceShellModule } from '@policygen/service-kit';
import { PipelineController } from '../pipeline/pipeline.controller';
import { PipelineService } from '../pipeline/pipeline.service';
import type { PipelineSettings } from '../pipeline/pipeline.service';
import { Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import type { DynamicModule } from '@nestjs/common';
import type { Messaging } from '@policygen/messaging';
import { ChangesController } from '../changes/changes.controller';
import { ChangesService } from '../changes/changes.service';
import { DeadLettersController } from '../dead-letters/dead-letters.controller';
import { DeadLettersService } from '../dead-letters/dead-letters.service';
import { ENTITY_CONTROLLERS } from '../entities/entity-controllers';
import { EntityService } from '../entities/entity.service';
import { ApiTokensController } from '../api-tokens/api-tokens.controller';
import type { ApiTokenRegistry } from '../api-tokens/api-token-registry';
import { WhoamiController } from '../api-tokens/whoami.controller';
import { NodeTokensController } from '../node-tokens/node-tokens.controller';
import { createOutboxProducer } from '../outbox/outbox-producer';
import { OutboxService } from '../outbox/outbox.service';
import { ParametersController } from '../parameters/parameters.controller';
import { RelayTokensController } from '../relays/relay-tokens.controller';
import { ParametersService } from '../parameters/parameters.service';
import { RevisionsController } from '../revisions/revisions.controller';
import { RevisionsService } from '../revisions/revisions.service';
import { SettingsController } from '../settings/settings.controller';
import { SettingsService } from '../settings/settings.service';
import { ConfigStateService } from '../state/config-state.service';
import { DEFAULT_OUTBOX_WINDOW_MS } from './config-service-options';
import type { ConfigServiceOptions, ServiceTimings } from './config-service-options';
import { StoreLifecycle } from './store-lifecycle';
import {
  API_TOKENS,
  CONFIG_STORE,
  MESSAGING,
  NODE_TOKEN_SECRET,
  OUTBOX_PRODUCER,
  PIPELINE_SETTINGS,
  SERVICE_TIMINGS,
} from './tokens';

@Module({})
export class ConfigServiceModule {
  static forRoot(
    options: ConfigServiceOptions,
    shell: ServiceShellOptions,
    apiTokens: ApiTokenRegistry,
  ): DynamicModule {
    const pipeline: PipelineSettings = {
      topics: options.topics ?? TOPICS,
      partitions: options.partitions ?? 12,
      generatorGroup: options.generatorGroup ?? 'policygen-generator',
    };
    const timings: ServiceTimings = {
      publishIntervalMs: options.publishIntervalMs ?? 1_000,
      outboxWindowMs: options.outboxWindowMs ?? DEFAULT_OUTBOX_WINDOW_MS,
      followIntervalMs: options.followIntervalMs ?? 1_000,
    };
    return {
      module: ConfigServiceModule,
      imports: [
        ServiceShellModule.forRoot(shell),
        // Only the controllers that ask for it (ThrottlerGuard) are limited: the token endpoints.
        ThrottlerModule.forRoot([{ ttl: 60_000, limit: options.tokenRequestsPerMinute ?? 600 }]),
      ],
      controllers: [
        ...ENTITY_CONTROLLERS,
        ParametersController,
        SettingsController,
        ChangesController,
        RevisionsController,
        NodeTokensController,
        ApiTokensController,
        WhoamiController,
        RelayTokensController,
        PipelineController,
        DeadLettersController,
      ],
      providers: [
        {
          // Resolved before anything that uses the store: the tables are migrated first.
          provide: CONFIG_STORE,
          useFactory: async () => {
            await options.store.migrate();
            return options.store;
          },
        },
        { provide: MESSAGING, useValue: options.messaging },
        {
          provide: OUTBOX_PRODUCER,
          useFactory: (messaging: Messaging) =>
            createOutboxProducer(messaging, options.changeTopic ?? TOPICS.configChanges),
          inject: [MESSAGING],
        },
        { provide: SERVICE_TIMINGS, useValue: timings },
        { provide: PIPELINE_SETTINGS, useValue: pipeline },
        { provide: API_TOKENS, useValue: apiTokens },
        { provide: NODE_TOKEN_SECRET, useValue: options.nodeTokenSecret ?? null },
        StoreLifecycle,
        OutboxService,
        ConfigStateService,
        EntityService,
        ParametersService,
        SettingsService,
        ChangesService,
        RevisionsService,
        PipelineService,
        DeadLettersService,
      ],
    };
  }
}
