import { Inject, Injectable } from '@nestjs/common';
import type { OnApplicationShutdown } from '@nestjs/common';
import type { ConfigStore } from '@policygen/store';
import type { ApiTokenRegistry } from '../api-tokens/api-token-registry';
import { API_TOKENS, CONFIG_STORE } from './tokens';

/** Closes the stores last: after every module's destroy hook, so nothing still uses it. */
@Injectable()
export class StoreLifecycle implements OnApplicationShutdown {
  constructor(
    @Inject(CONFIG_STORE) private readonly store: ConfigStore,
    @Inject(API_TOKENS) private readonly apiTokens: ApiTokenRegistry,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
    await this.apiTokens.close();
  }
}
