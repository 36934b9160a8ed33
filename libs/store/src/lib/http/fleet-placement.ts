import { z } from 'zod';
import type { Fleet } from '@policygen/engine';

/** Where a node or a relay is served from: its policy server (`root` or a relay's id). */
export interface Placement {
  readonly id: string;
  readonly policyServer: string;
}

/** The relay tree of a configuration and where its nodes sit in it: `GET /api/v1/export?view=placement`. */
export interface FleetPlacement {
  readonly nodes: readonly Placement[];
  readonly relays: readonly Placement[];
}

/** A placement at a revision, from which the change log is followed (what the distribution loads). */
export interface PlacementSnapshot {
  readonly revision: number;
  readonly placement: FleetPlacement;
  /** When that revision was committed, if the source knows (ISO 8601). */
  readonly committedAt?: string;
}

export interface PlacementSource {
  /** The newest configuration's placement. */
  latestPlacement(): Promise<PlacementSnapshot>;
}

export function placementOf(fleet: Pick<Fleet, 'nodes' | 'relays'>): FleetPlacement {
  return {
    nodes: fleet.nodes.map(({ id, policyServer }) => ({ id, policyServer })),
    relays: fleet.relays.map(({ id, policyServer }) => ({ id, policyServer })),
  };
}

const placement = z.strictObject({ id: z.string().min(1), policyServer: z.string().min(1) });
const fleetPlacementSchema = z.strictObject({ nodes: z.array(placement), relays: z.array(placement) });

/** A placement as the config-service exports it; every issue names its JSON path. */
export function parseFleetPlacement(
  value: unknown,
):
  | { readonly ok: true; readonly placement: FleetPlacement }
  | { readonly ok: false; readonly issues: string[] } {
  const result = fleetPlacementSchema.safeParse(value);
  if (result.success) return { ok: true, placement: result.data };
  return {
    ok: false,
    issues: result.error.issues.map(
      (issue) =>
        `$${issue.path.map((segment) => (typeof segment === 'number' ? `[${segment}]` : `.${String(segment)}`)).join('')}: ${issue.message}`,
    ),
  };
}
