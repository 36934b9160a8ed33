import { describeApiTokenStoreContract } from './api-token-store-contract';
import { MemoryApiTokenStore } from './memory-api-token-store';

describeApiTokenStoreContract('MemoryApiTokenStore', () => ({
  open: () => new MemoryApiTokenStore(),
  dispose: () => Promise.resolve(),
}));
