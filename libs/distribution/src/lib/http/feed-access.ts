import { createParamDecorator, UnauthorizedException } from '@nestjs/common';
import type { ExecutionContext } from '@nestjs/common';
import type { AuthenticatedRequest, Authenticator, Principal } from '@policygen/service-kit';
import { digestMatches } from '@policygen/service-kit';
import type { FeedLog } from '../disk/feed-log';
import type { SubtreeRelay } from '../feed';
import { entryFor, subtreeRelaySchema } from '../feed';
import { nodeKey, nodeTokenValid, parseNodeToken } from '../node-token';
import { claimedRelayId, issueRelayToken, relayCredentialDigest, verifyRelayToken } from '../relay-token';
import type { RelayTopology } from '../topology';

export const RELAY_DIRECTORY = Symbol('RELAY_DIRECTORY');

/** The relays a parent knows below it: whom it passes credentials down to, and whose confirmations it takes. */
export interface RelayDirectory {
  /** The relays below `relayId` (itself left out), with their credentials' digests: for its feed pages. */
  below(relayId: string): readonly SubtreeRelay[];
  /** Whether `relayId` is `ancestor` or a relay known below it. */
  within(relayId: string, ancestor: string): boolean;
}

/** The caller the credential guard let in (`@Requires` on the route says which kinds). */
export const Caller = createParamDecorator((_: unknown, context: ExecutionContext): Principal => {
  const principal = context.switchToHttp().getRequest<AuthenticatedRequest>().principal;
  // Only a route without the guard gets here without one: refuse rather than serve anonymously.
  if (!principal) throw new UnauthorizedException('a credential is required: Authorization: Bearer <token>');
  return principal;
});

/**
 * The distribution-service's relay directory: the relay tree of the configuration, each relay's
 * credential derived from the deployment's secret (digests cached: the tree changes rarely).
 */
export class TopologyRelayDirectory implements RelayDirectory {
  private readonly digests = new Map<string, string>();

  constructor(
    private readonly secret: string | null,
    private readonly topology: () => RelayTopology | null,
  ) {}

  below(relayId: string): readonly SubtreeRelay[] {
    const topology = this.topology();
    if (!topology || this.secret === null) return [];
    const relays: SubtreeRelay[] = [];
    for (const known of topology.relayIds()) {
      if (known === relayId) continue;
      const path = topology.relayPath(known);
      if (path.includes(relayId))
        relays.push({ relayId: known, path: [...path], credentialDigest: this.digestOf(known) });
    }
    return relays;
  }

  within(relayId: string, ancestor: string): boolean {
    if (relayId === ancestor) return true;
    const topology = this.topology();
    return !!topology && topology.hasRelay(relayId) && topology.relayPath(relayId).includes(ancestor);
  }

  private digestOf(relayId: string): string {
    let digest = this.digests.get(relayId);
    if (digest === undefined) {
      digest = relayCredentialDigest(issueRelayToken(this.secret ?? '', relayId));
      this.digests.set(relayId, digest);
    }
    return digest;
  }
}

/**
 * A relay's relay directory: the relays of its subtree as its parent's feed pages name them. It
 * holds no secret, only the digests of its subtree's credentials.
 */
export class KnownRelays implements RelayDirectory {
  private byId = new Map<string, SubtreeRelay>();

  constructor(relays: readonly SubtreeRelay[] = []) {
    this.replace(relays);
  }

  /** The relays as the parent now names them; whether anything changed. */
  replace(relays: readonly SubtreeRelay[]): boolean {
    const next = new Map(relays.map((relay) => [relay.relayId, relay]));
    const changed =
      next.size !== this.byId.size ||
      relays.some((relay) => {
        const known = this.byId.get(relay.relayId);
        return (
          !known ||
          known.credentialDigest !== relay.credentialDigest ||
          known.path.join('\n') !== relay.path.join('\n')
        );
      });
    this.byId = next;
    return changed;
  }

  /** Every relay known, for saving. */
  all(): readonly SubtreeRelay[] {
    return [...this.byId.values()];
  }

  credentialDigestOf(relayId: string): string | undefined {
    return this.byId.get(relayId)?.credentialDigest;
  }

  below(relayId: string): readonly SubtreeRelay[] {
    return [...this.byId.values()].filter(
      (relay) => relay.relayId !== relayId && relay.path.includes(relayId),
    );
  }

  within(relayId: string, ancestor: string): boolean {
    return relayId === ancestor || (this.byId.get(relayId)?.path.includes(ancestor) ?? false);
  }

  static read(text: string): KnownRelays {
    return new KnownRelays(subtreeRelaySchema.array().parse(JSON.parse(text)));
  }
}

/**
 * The distribution-service's credentials: relays' and nodes' alike are checked with the deployment's
 * secret (null: none configured, nobody gets in). `now` is the clock (epoch ms), for node tokens' expiry.
 */
export function deploymentAuthenticator(secret: string | null, now: () => number = Date.now): Authenticator {
  return {
    authenticate(token) {
      if (secret === null) return null;
      const relayId = verifyRelayToken(secret, token);
      if (relayId !== null) return { kind: 'relay', relayId };
      const claim = parseNodeToken(token);
      return claim && nodeTokenValid(claim, nodeKey(secret, claim.nodeId), now())
        ? { kind: 'node', nodeId: claim.nodeId }
        : null;
    },
  };
}

export interface SubtreeAuthenticatorOptions {
  /** The relay checking: it knows the nodes it keeps, and the relays below it. */
  readonly relayId: string;
  readonly log: FeedLog;
  readonly relays: KnownRelays;
  readonly now?: () => number;
}

/**
 * A relay's credentials, without the deployment's secret: a relay of its subtree by its credential's
 * digest, a node it serves by the node's key, both from its feed. Each costs one hash.
 */
export function subtreeAuthenticator(options: SubtreeAuthenticatorOptions): Authenticator {
  const now = options.now ?? Date.now;
  return {
    authenticate(token) {
      const relayId = claimedRelayId(token);
      if (relayId !== null) {
        const digest = options.relays.credentialDigestOf(relayId);
        if (digest !== undefined && digestMatches(token, digest)) return { kind: 'relay', relayId };
      }
      const claim = parseNodeToken(token);
      const entry = claim ? options.log.latest(claim.nodeId) : undefined;
      const key = entry?.bundle?.nodeKey;
      return claim &&
        entry &&
        key &&
        entryFor(entry, options.relayId) === 'keep' &&
        nodeTokenValid(claim, key, now())
        ? { kind: 'node', nodeId: claim.nodeId }
        : null;
    },
  };
}
