export const RELAY_IDENTITY = Symbol('RELAY_IDENTITY');
export const FETCH_RECORDER = Symbol('FETCH_RECORDER');
export const NODE_TREES = Symbol('NODE_TREES');

export interface RelayIdentity {
  readonly relayId: string;
  readonly parentUrl: string;
}
