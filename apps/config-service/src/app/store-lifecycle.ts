import { Inject, Injectable } from '@nestjs/common';
import type { OnApplicationShutdown } from '@nestjs/common';
import type { ConfigStore } from '@policygen/store';
import { CONFIG_STORE } from './tokens';

/** Closes the store last: after every module's destroy hook, so nothing still uses it. */
@Injectable()
export class StoreLifecycle implements OnApplicationShutdown {
  constructor(@Inject(CONFIG_STORE) private readonly store: ConfigStore) {}

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
  }
}
