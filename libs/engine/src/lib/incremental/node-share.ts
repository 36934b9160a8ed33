/** Which nodes an engine holds: the others are not in its configuration at all. */
export type NodeShare = (nodeId: string) => boolean;

/*
 * A node's bundle depends on its own entity and on the configuration's shared entities (settings,
 * parameters, techniques, directives, relationships, rules, groups, relays), never on another
 * node's: group memberships and property inheritance are evaluated node by node. So an engine that
 * generates a share of the nodes (one generator instance of several) can leave the others out —
 * their facts and properties, their memberships, their place in the indexes — and still give each
 * of its nodes the result an engine of the whole fleet gives (ownership property tests). The only
 * other places a node is named are the groups' static lists; there a node left out is simply not
 * a member, which is true for every node the engine holds.
 *
 * One rule serves a configuration as it arrives (a snapshot, before validation: validated whole,
 * the static lists would name nodes this share does not have) and one already validated: a valid
 * configuration is an input like any other. Only mentions by a string id are left out; anything
 * else stays for validation to name. Meant for a committed configuration (valid whole): faults in
 * the other nodes go unseen. What has nothing to leave out comes back as it came (the same object).
 */

/** A fleet, as a file or validated, with the nodes not held left out, also from static group lists. */
export function fleetShare<Entities>(fleet: Entities, holds: NodeShare): Entities {
  return isRecord(fleet) ? (entitiesShare(fleet, holds) as Entities) : fleet;
}

/** A change set, as it arrives or validated: its upserts as `fleetShare` has them, its node deletions held ones only. */
export function changeSetShare<Change>(change: Change, holds: NodeShare): Change {
  if (!isRecord(change)) return change;
  let share: Record<string, unknown> = change;
  const upsert = change['upsert'];
  if (isRecord(upsert)) {
    const upserts = entitiesShare(upsert, holds);
    if (upserts !== upsert) share = { ...share, upsert: upserts };
  }
  const deletions = change['delete'];
  if (isRecord(deletions)) {
    const nodes = deletions['nodes'];
    if (Array.isArray(nodes) && !nodes.every((id) => heldOrMalformed(id, holds)))
      share = { ...share, delete: { ...deletions, nodes: nodes.filter((id) => heldOrMalformed(id, holds)) } };
  }
  return share as Change;
}

/** Collections of entities (a fleet, a change set's upserts) with the nodes not held left out. */
function entitiesShare(entities: Record<string, unknown>, holds: NodeShare): Record<string, unknown> {
  let share = entities;
  const nodes = entities['nodes'];
  if (Array.isArray(nodes)) {
    const held = nodes.filter((node) => !isRecord(node) || heldOrMalformed(node['id'], holds));
    if (held.length !== nodes.length) share = { ...share, nodes: held };
  }
  const groups = entities['groups'];
  if (Array.isArray(groups) && groups.some((group) => mentionsOthers(group, holds)))
    share = {
      ...share,
      groups: groups.map((group) =>
        mentionsOthers(group, holds)
          ? {
              ...group,
              nodes: (group as { nodes: unknown[] }).nodes.filter((id) => heldOrMalformed(id, holds)),
            }
          : group,
      ),
    };
  return share;
}

function mentionsOthers(group: unknown, holds: NodeShare): boolean {
  if (!isRecord(group)) return false;
  const nodes = group['nodes'];
  return Array.isArray(nodes) && !nodes.every((id) => heldOrMalformed(id, holds));
}

function heldOrMalformed(id: unknown, holds: NodeShare): boolean {
  return typeof id !== 'string' || holds(id);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
