export { startRelay } from './app/relay-service';
export type { RelayOptions, RelayService } from './app/relay-service';
