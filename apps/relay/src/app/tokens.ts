export const FOLLOWER = Symbol('FOLLOWER');
export const RELAY_IDENTITY = Symbol('RELAY_IDENTITY');

export interface RelayIdentity {
  readonly relayId: string;
  readonly parentUrl: string;
}
