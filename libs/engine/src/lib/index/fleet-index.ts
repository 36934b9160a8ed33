import type {
  Directive,
  Fleet,
  FleetNode,
  Group,
  Relationship,
  Relay,
  Rule,
  Settings,
  Technique,
} from '../model/fleet';
import type { Json } from '../model/json';
import { canonicalJson, isJsonObject } from '../model/json';
import { valueAtPath } from '../targeting/criteria';
import { compareCodeUnits } from '../text/compare';
import type { ParsedChangeSet } from './change-set';
import { relationshipKey } from './change-set';
import type { MembershipContext } from './membership';
import {
  computeAncestors,
  criteriaList,
  evaluateMembers,
  groupEvaluationOrder,
  hasGroupCycle,
  isMember,
  referencedGroups,
  ValueIndex,
} from './membership';
import { inKeyOrder } from './key-order';
import { insertSorted, removeSorted } from './sorted';
import type { TargetContext } from './targets';
import {
  dependsOnPolicyServers,
  disabledGroupIn,
  evaluateTarget,
  groupReferences,
  targetSelects,
} from './targets';
import { flatMapList, mapList } from '../model/lists';

/** A validated configuration with the indexes generation needs (memberships, lookups). */
export interface CompiledFleet {
  readonly settings: Settings;
  readonly parameters: Readonly<Record<string, Json>>;
  readonly relationships: readonly Relationship[];
  /** Node ids, sorted. */
  readonly nodeIds: readonly string[];
  readonly nodes: ReadonlyMap<string, FleetNode>;
  readonly directives: ReadonlyMap<string, Directive>;
  readonly rules: ReadonlyMap<string, Rule>;
  readonly groups: ReadonlyMap<string, Group>;
  readonly relays: ReadonlyMap<string, Relay>;
  /** Technique id → version → technique. */
  readonly techniques: ReadonlyMap<string, ReadonlyMap<string, Technique>>;
  /** Group id → its members (static ∪ dynamic), whether the group is enabled or not. */
  readonly members: ReadonlyMap<string, ReadonlySet<string>>;
  /** Node id → ids of the groups it belongs to, sorted. */
  readonly groupsOfNode: ReadonlyMap<string, readonly string[]>;
  /** Group id → its ancestors through the subgroup relation (criteria `all` naming `{group: P}`). */
  readonly ancestors: ReadonlyMap<string, ReadonlySet<string>>;
  /** Node id → the enabled rules that target it, sorted by id. */
  readonly rulesOfNode: ReadonlyMap<string, readonly string[]>;
  /** Rule id → the nodes it applies to (empty when inactive). */
  readonly ruleTargets: ReadonlyMap<string, ReadonlySet<string>>;
  /** Rule id → why it applies to no node, when it applies to none by construction. */
  readonly inactiveRules: ReadonlyMap<string, string>;
  /** Directive id → the fleet-wide `relationships` that name it. */
  readonly relationshipsOf: ReadonlyMap<string, readonly Relationship[]>;
  /** Policy servers: root and every relay id. */
  readonly policyServers: ReadonlySet<string>;
  /** Directive id → the rules that carry it. */
  readonly rulesOfDirective: ReadonlyMap<string, ReadonlySet<string>>;
}

/** What a change set did to the configuration, as generation sees it. */
export interface IndexDelta {
  /** Nodes (still in the fleet) whose bundle may differ. */
  readonly affected: Set<string>;
  readonly removed: Set<string>;
  /** Rules whose policies (their directives, techniques, names, relationships) changed. */
  readonly dirtyRules: Set<string>;
  /** Group properties, enabled flags, subgroup relations or global parameters changed. */
  readonly propertyLayersChanged: boolean;
  /**
   * The groups whose properties or enabled flag changed, or that went: property levels naming none
   * of them are as they were. `all` when the subgroup relation changed.
   */
  readonly propertyGroupsChanged: ReadonlySet<string> | 'all';
  /** Global parameters whose value changed, or that were added or deleted. */
  readonly parametersChanged: ReadonlySet<string>;
  readonly settingsChanged: boolean;
}

/**
 * Every node's groups and enabled rules, sorted, as an index of the same fleet computed them (each
 * node's are its own: criteria and targets look at the node alone). Handed to `FleetIndex.build`,
 * they spare it evaluating every group and rule again (workers that indexed shares of the fleet).
 */
export interface NodeMemberships {
  readonly groupsOfNode: ReadonlyMap<string, readonly string[]>;
  readonly rulesOfNode: ReadonlyMap<string, readonly string[]>;
  /**
   * The same memberships by group and by enabled rule, when the caller gathered them alongside: the
   * index takes these sets as its own (the caller lets go of them) instead of building them node by node.
   */
  readonly members?: ReadonlyMap<string, Set<string>>;
  readonly ruleTargets?: ReadonlyMap<string, Set<string>>;
}

export function compileFleet(fleet: Fleet): CompiledFleet {
  return FleetIndex.build(fleet);
}

/**
 * The configuration and its indexes, kept up to date change set by change set: memberships, rule
 * targets and the reverse references that say which nodes a change reaches. Never rebuilt whole
 * after construction; each change re-evaluates only what names the changed entities.
 */
export class FleetIndex implements CompiledFleet {
  settings: Settings;
  parameters: Readonly<Record<string, Json>>;
  relationships: readonly Relationship[];
  readonly nodes = new Map<string, FleetNode>();
  readonly directives = new Map<string, Directive>();
  readonly rules = new Map<string, Rule>();
  readonly groups = new Map<string, Group>();
  readonly relays = new Map<string, Relay>();
  readonly techniques = new Map<string, Map<string, Technique>>();
  readonly members = new Map<string, Set<string>>();
  readonly groupsOfNode = new Map<string, string[]>();
  ancestors = new Map<string, Set<string>>();
  readonly rulesOfNode = new Map<string, string[]>();
  readonly ruleTargets = new Map<string, Set<string>>();
  readonly inactiveRules = new Map<string, string>();
  relationshipsOf = new Map<string, Relationship[]>();
  readonly policyServers = new Set<string>(['root']);
  readonly rulesOfDirective = new Map<string, Set<string>>();
  private readonly directivesOfTechnique = new Map<string, Set<string>>();
  private readonly rulesOfGroup = new Map<string, Set<string>>();
  private readonly dependentGroups = new Map<string, Set<string>>();
  /** `f:<fact path>` or `p:<property path>` → the groups whose criteria read it. */
  private readonly groupsReading = new Map<string, Set<string>>();
  private groupOrder: string[] = [];
  private cycleFree = true;
  private sortedNodeIds: string[] | undefined;
  private readonly values = new ValueIndex(this.nodes);
  private readonly regexCache = new Map<string, RegExp>();

  private constructor(fleet: Fleet) {
    this.settings = fleet.settings;
    this.parameters = fleet.parameters;
    this.relationships = fleet.relationships;
  }

  /** The index of a fleet; with `memberships`, taken as given instead of evaluated (see `NodeMemberships`). */
  static build(fleet: Fleet, memberships?: NodeMemberships): FleetIndex {
    const index = new FleetIndex(fleet);
    for (const technique of fleet.techniques) index.setTechnique(technique);
    for (const directive of fleet.directives) index.setDirective(directive);
    for (const rule of fleet.rules) index.setRule(rule);
    for (const group of fleet.groups) index.setGroup(group);
    for (const relay of fleet.relays) index.setRelay(relay);
    for (const node of fleet.nodes) {
      index.nodes.set(node.id, node);
      index.groupsOfNode.set(node.id, []);
      index.rulesOfNode.set(node.id, []);
    }
    index.relationshipsOf = relationshipsByDirective(index.relationships);
    index.refreshGroupStructure();
    if (memberships) {
      index.adoptMemberships(memberships);
      return index;
    }
    const nodeIds = index.nodeIds;
    for (const groupId of index.groupOrder) {
      const members = evaluateMembers(index.groups.get(groupId) as Group, nodeIds, index.membership);
      index.members.set(groupId, members);
      for (const nodeId of members) index.groupsOfNode.get(nodeId)?.push(groupId);
    }
    for (const list of index.groupsOfNode.values()) list.sort(compareCodeUnits);
    for (const ruleId of [...index.rules.keys()].sort(compareCodeUnits)) index.setRuleTargets(ruleId);
    return index;
  }

  /** No groups name each other in a circle: a change that adds no group reference keeps it so. */
  get groupsAcyclic(): boolean {
    return this.cycleFree;
  }

  get nodeIds(): readonly string[] {
    this.sortedNodeIds ??= [...this.nodes.keys()].sort(compareCodeUnits);
    return this.sortedNodeIds;
  }

  /** The configuration as a fleet (collections sorted by key, in code-unit order). */
  toFleet(): Fleet {
    return inKeyOrder({
      settings: this.settings,
      parameters: this.parameters,
      techniques: flatMapList([...this.techniques.values()], (versions) => [...versions.values()]),
      directives: [...this.directives.values()],
      relationships: this.relationships,
      rules: [...this.rules.values()],
      groups: [...this.groups.values()],
      nodes: [...this.nodes.values()],
      relays: [...this.relays.values()],
    });
  }

  /** The nodes a rule's directives reach: the nodes of every rule that carries the directive. */
  nodesOfDirective(directiveId: string, into: Set<string> = new Set()): Set<string> {
    for (const ruleId of this.rulesOfDirective.get(directiveId) ?? [])
      for (const nodeId of this.ruleTargets.get(ruleId) ?? []) into.add(nodeId);
    return into;
  }

  /** Applies a validated change set and says which nodes it can have changed. */
  apply(change: ParsedChangeSet): IndexDelta {
    const affected = new Set<string>();
    const removed = new Set<string>();
    const dirtyRules = new Set<string>();
    const touchedDirectives = new Set<string>();
    let propertyLayersChanged = false;
    const propertyGroups = new Set<string>();
    let everyLevel = false;

    // Techniques and directives: what they change is the policies of the rules carrying them.
    for (const key of change.delete.techniques) {
      this.techniques.get(key.id)?.delete(key.version);
      if (this.techniques.get(key.id)?.size === 0) this.techniques.delete(key.id);
      for (const directiveId of this.directivesOfTechnique.get(key.id) ?? [])
        touchedDirectives.add(directiveId);
    }
    for (const technique of change.upsert.techniques) {
      this.setTechnique(technique);
      for (const directiveId of this.directivesOfTechnique.get(technique.id) ?? [])
        touchedDirectives.add(directiveId);
    }
    for (const directiveId of change.delete.directives) {
      this.removeDirective(directiveId);
      touchedDirectives.add(directiveId);
    }
    const revaluedDirectives = new Set<string>();
    for (const directive of change.upsert.directives) {
      const before = this.directives.get(directive.id);
      this.setDirective(directive);
      // New parameter values leave every policy's shape (merge, order, names) as it was.
      if (before && onlyValuesDiffer(before, directive)) revaluedDirectives.add(directive.id);
      else touchedDirectives.add(directive.id);
    }

    // Relationships: they order the nodes holding both ends.
    const changedRelationships: Relationship[] = [];
    if (change.upsert.relationships.length > 0 || change.delete.relationships.length > 0) {
      const byKey = new Map(
        mapList(this.relationships, (relationship) => [relationshipKey(relationship), relationship]),
      );
      for (const relationship of change.delete.relationships) {
        const key = relationshipKey(relationship);
        const existing = byKey.get(key);
        if (existing) changedRelationships.push(existing);
        byKey.delete(key);
      }
      for (const relationship of change.upsert.relationships) {
        if (!byKey.has(relationshipKey(relationship))) changedRelationships.push(relationship);
        byKey.set(relationshipKey(relationship), relationship);
      }
      this.relationships = [...byKey.values()];
      this.relationshipsOf = relationshipsByDirective(this.relationships);
    }

    // Parameters and settings.
    const changedParameters = new Map<string, { before: Json | undefined; after: Json | undefined }>();
    if (change.delete.parameters.length > 0 || Object.keys(change.upsert.parameters).length > 0) {
      const parameters: Record<string, Json> = { ...this.parameters };
      for (const name of change.delete.parameters) {
        if (name in parameters) changedParameters.set(name, { before: parameters[name], after: undefined });
        delete parameters[name];
      }
      for (const [name, value] of Object.entries(change.upsert.parameters)) {
        const before = changedParameters.get(name)?.before ?? parameters[name];
        if (before === undefined || canonicalJson(before) !== canonicalJson(value))
          changedParameters.set(name, { before, after: value });
        else changedParameters.delete(name);
        parameters[name] = value;
      }
      this.parameters = parameters;
      if (changedParameters.size > 0) propertyLayersChanged = true;
    }
    const settings = { ...this.settings, ...change.upsert.settings };
    // Every setting reaches every node (ordering, policy mode, parameters' inheritance modes).
    const settingsChanged = canonicalJson(settings) !== canonicalJson(this.settings);
    this.settings = settings;

    // Rules.
    const rulesToEvaluate = new Set<string>();
    for (const ruleId of change.delete.rules) {
      this.removeRule(ruleId);
      rulesToEvaluate.add(ruleId);
      dirtyRules.add(ruleId);
    }
    for (const rule of change.upsert.rules) {
      const before = this.rules.get(rule.id);
      this.setRule(rule);
      rulesToEvaluate.add(rule.id);
      if (
        !before ||
        before.name !== rule.name ||
        canonicalJson(before.directives) !== canonicalJson(rule.directives)
      ) {
        dirtyRules.add(rule.id);
        // Every node of the rule, before and after: the old ones through the target diff.
        for (const nodeId of this.ruleTargets.get(rule.id) ?? []) affected.add(nodeId);
      }
    }

    // Relays.
    if (change.upsert.relays.length > 0 || change.delete.relays.length > 0) {
      for (const relayId of change.delete.relays) {
        this.relays.delete(relayId);
        this.policyServers.delete(relayId);
      }
      for (const relay of change.upsert.relays) this.setRelay(relay);
      for (const [ruleId, rule] of this.rules)
        if (dependsOnPolicyServers(rule.targets)) rulesToEvaluate.add(ruleId);
    }

    // Nodes: facts and properties decide memberships; id, hostname, server, state, policy mode,
    // properties and their inheritance modes the output.
    const evaluatedNodes: FleetNode[] = [];
    const previousNodes = new Map<string, FleetNode>();
    for (const nodeId of change.delete.nodes) this.removeNode(nodeId, removed);
    for (const node of change.upsert.nodes) {
      const before = this.nodes.get(node.id);
      if (before) previousNodes.set(node.id, before);
      if (before) this.values.nodeRemoved(before);
      else {
        this.groupsOfNode.set(node.id, []);
        this.rulesOfNode.set(node.id, []);
        this.sortedNodeIds = undefined;
      }
      this.nodes.set(node.id, node);
      this.values.nodeAdded(node);
      removed.delete(node.id);
      evaluatedNodes.push(node);
      if (!before || outputFieldsDiffer(before, node)) affected.add(node.id);
    }

    // Groups: memberships of the changed groups and of every group naming them, in dependency order.
    const groupsWithChangedMembers = new Set<string>();
    if (change.upsert.groups.length > 0 || change.delete.groups.length > 0) {
      const toEvaluate = new Set<string>();
      const previousAncestors = this.ancestors;
      for (const groupId of change.delete.groups) {
        if (givesProperties(this.groups.get(groupId))) {
          propertyLayersChanged = true;
          propertyGroups.add(groupId);
        }
        this.removeGroup(groupId, affected);
        groupsWithChangedMembers.add(groupId);
        for (const ruleId of this.rulesOfGroup.get(groupId) ?? []) rulesToEvaluate.add(ruleId);
      }
      // The group structure (order, ancestors, who reads what) follows from the ids and criteria alone.
      let structureChanged = change.delete.groups.length > 0;
      for (const group of change.upsert.groups) {
        const before = this.groups.get(group.id);
        this.setGroup(group);
        const criteriaChanged =
          !before ||
          canonicalJson((before.criteria ?? null) as Json) !==
            canonicalJson((group.criteria ?? null) as Json);
        if (criteriaChanged) structureChanged = true;
        if (criteriaChanged || canonicalJson(before.nodes) !== canonicalJson(group.nodes))
          toEvaluate.add(group.id);
        if (
          !before ||
          before.enabled !== group.enabled ||
          canonicalJson(before.properties) !== canonicalJson(group.properties) ||
          canonicalJson(before.inheritModes ?? {}) !== canonicalJson(group.inheritModes ?? {})
        ) {
          propertyLayersChanged = true;
          propertyGroups.add(group.id);
          for (const nodeId of this.members.get(group.id) ?? []) affected.add(nodeId);
          if (before?.enabled !== group.enabled)
            for (const ruleId of this.rulesOfGroup.get(group.id) ?? []) rulesToEvaluate.add(ruleId);
        }
      }
      if (structureChanged) this.refreshGroupStructure();
      for (const [groupId, ancestors] of structureChanged ? this.ancestors : []) {
        if (!sameSet(previousAncestors.get(groupId), ancestors)) {
          propertyLayersChanged = true;
          everyLevel = true;
          for (const nodeId of this.members.get(groupId) ?? []) affected.add(nodeId);
        }
      }
      const closure = this.dependentClosure(toEvaluate);
      const nodeIds = this.nodeIds;
      for (const groupId of this.groupOrder) {
        if (!closure.has(groupId)) continue;
        const group = this.groups.get(groupId) as Group;
        if (this.updateMembers(groupId, evaluateMembers(group, nodeIds, this.membership), affected))
          groupsWithChangedMembers.add(groupId);
      }
    }
    // A node already known can change membership only of the groups reading a value of it that
    // changed, and of the groups naming those: the others keep it as they had it.
    const membershipsMoved = new Set<string>();
    for (const node of evaluatedNodes) {
      const before = previousNodes.get(node.id);
      const toTest = before ? this.groupsReadingChanges(before, node) : undefined;
      for (const groupId of this.groupOrder) {
        if (toTest && !toTest.has(groupId)) continue;
        const group = this.groups.get(groupId) as Group;
        const members = this.members.get(groupId) as Set<string>;
        const member = isMember(group, node, this.membership);
        if (member === members.has(node.id)) continue;
        if (member) {
          members.add(node.id);
          insertSorted(this.groupsOfNode.get(node.id) as string[], groupId);
        } else {
          members.delete(node.id);
          removeSorted(this.groupsOfNode.get(node.id) as string[], groupId);
        }
        membershipsMoved.add(node.id);
        if (toTest) for (const dependent of this.dependentGroups.get(groupId) ?? []) toTest.add(dependent);
        if (givesProperties(group)) affected.add(node.id);
      }
    }
    for (const groupId of groupsWithChangedMembers)
      for (const ruleId of this.rulesOfGroup.get(groupId) ?? []) rulesToEvaluate.add(ruleId);

    // Rule targets: whole re-evaluation for the rules above, one node at a time for changed nodes.
    for (const ruleId of rulesToEvaluate) this.setRuleTargets(ruleId, affected);
    if (evaluatedNodes.length > 0) {
      for (const [ruleId, rule] of this.rules) {
        if (rulesToEvaluate.has(ruleId) || this.inactiveRules.has(ruleId)) continue;
        const targets = this.ruleTargets.get(ruleId) as Set<string>;
        for (const node of evaluatedNodes) {
          // Targets read a node's groups, its id and its policy server: when those stayed, so does the rule.
          const before = previousNodes.get(node.id);
          if (before && !membershipsMoved.has(node.id) && before.policyServer === node.policyServer) continue;
          const selected = targetSelects(rule.targets, node, this.targetContext);
          if (selected === targets.has(node.id)) continue;
          if (selected) {
            targets.add(node.id);
            insertSorted(this.rulesOfNode.get(node.id) as string[], ruleId);
          } else {
            targets.delete(node.id);
            removeSorted(this.rulesOfNode.get(node.id) as string[], ruleId);
          }
          affected.add(node.id);
        }
      }
    }

    // What changed in content reaches the nodes of the rules carrying it.
    for (const directiveId of touchedDirectives) {
      for (const ruleId of this.rulesOfDirective.get(directiveId) ?? []) dirtyRules.add(ruleId);
      this.nodesOfDirective(directiveId, affected);
    }
    for (const directiveId of revaluedDirectives)
      if (!touchedDirectives.has(directiveId)) this.nodesOfDirective(directiveId, affected);
    for (const relationship of changedRelationships) {
      for (const end of [relationship.from, relationship.to])
        for (const ruleId of this.rulesOfDirective.get(end) ?? []) dirtyRules.add(ruleId);
      const to = this.nodesOfDirective(relationship.to);
      for (const nodeId of this.nodesOfDirective(relationship.from)) if (to.has(nodeId)) affected.add(nodeId);
    }
    for (const ruleId of dirtyRules)
      for (const nodeId of this.ruleTargets.get(ruleId) ?? []) affected.add(nodeId);
    if (changedParameters.size > 0) this.addParameterReaders(changedParameters, affected);
    if (settingsChanged) for (const nodeId of this.nodes.keys()) affected.add(nodeId);

    for (const nodeId of removed) affected.delete(nodeId);
    const upserted = new Set(evaluatedNodes.map((node) => node.id));
    for (const nodeId of affected) {
      // An ignored node gets nothing whatever its inputs: only its own change can reach it.
      if (this.nodes.get(nodeId)?.state === 'ignored' && !upserted.has(nodeId)) affected.delete(nodeId);
    }
    return {
      affected,
      removed,
      dirtyRules,
      propertyLayersChanged,
      propertyGroupsChanged: everyLevel ? 'all' : propertyGroups,
      parametersChanged: new Set(changedParameters.keys()),
      settingsChanged,
    };
  }

  private get membership(): MembershipContext {
    return { nodes: this.nodes, members: this.members, values: this.values, regexCache: this.regexCache };
  }

  private get targetContext(): TargetContext {
    return {
      nodeIds: this.nodeIds,
      nodes: this.nodes,
      members: this.members,
      policyServers: this.policyServers,
    };
  }

  /**
   * A global parameter is the lowest property level: it reaches a node unless a group or the node
   * replaces the property whole (a non-object above it, or any value above a non-object). Directives
   * reading `${rudder.param.NAME}` reach their nodes whatever the levels.
   */
  private addParameterReaders(
    changed: ReadonlyMap<string, { before: Json | undefined; after: Json | undefined }>,
    affected: Set<string>,
  ): void {
    const reads = (value: unknown): boolean => {
      const text = JSON.stringify(value) ?? '';
      return [...changed.keys()].some((name) => text.includes(`rudder.param.${name}`));
    };
    const readingTechniques = new Set<string>();
    for (const [techniqueId, versions] of this.techniques)
      for (const technique of versions.values())
        if (reads(technique.parameters)) readingTechniques.add(techniqueId);
    for (const [directiveId, directive] of this.directives) {
      if (readingTechniques.has(directive.technique) || reads(directive.parameters))
        this.nodesOfDirective(directiveId, affected);
    }
    for (const [nodeId, node] of this.nodes) {
      if (affected.has(nodeId) || node.state === 'ignored') continue;
      for (const [name, { before, after }] of changed) {
        if (this.globalReaches(node, name, before, after)) {
          affected.add(nodeId);
          break;
        }
      }
    }
  }

  private globalReaches(
    node: FleetNode,
    name: string,
    before: Json | undefined,
    after: Json | undefined,
  ): boolean {
    const above: Json[] = [];
    // An inheritance mode may append to or prepend the global value: then nothing hides it.
    let moded = Object.hasOwn(this.settings.parameterInheritModes, name);
    for (const groupId of this.groupsOfNode.get(node.id) ?? []) {
      const group = this.groups.get(groupId) as Group;
      if (group.enabled && name in group.properties) above.push(group.properties[name] as Json);
      if (group.enabled && group.inheritModes && Object.hasOwn(group.inheritModes, name)) moded = true;
    }
    if (name in node.properties) above.push(node.properties[name] as Json);
    if (node.inheritModes && Object.hasOwn(node.inheritModes, name)) moded = true;
    if (above.length === 0 || moded) return true;
    if (above.some((value) => !isJsonObject(value))) return false;
    return isJsonObject(before) || isJsonObject(after);
  }

  private setTechnique(technique: Technique): void {
    const versions = this.techniques.get(technique.id) ?? new Map<string, Technique>();
    versions.set(technique.version, technique);
    this.techniques.set(technique.id, versions);
  }

  private setDirective(directive: Directive): void {
    const before = this.directives.get(directive.id);
    if (before) this.directivesOfTechnique.get(before.technique)?.delete(directive.id);
    this.directives.set(directive.id, directive);
    addTo(this.directivesOfTechnique, directive.technique, directive.id);
  }

  private removeDirective(directiveId: string): void {
    const before = this.directives.get(directiveId);
    if (before) this.directivesOfTechnique.get(before.technique)?.delete(directiveId);
    this.directives.delete(directiveId);
  }

  private setRule(rule: Rule): void {
    this.unlinkRule(rule.id);
    this.rules.set(rule.id, rule);
    for (const directiveId of rule.directives) addTo(this.rulesOfDirective, directiveId, rule.id);
    for (const groupId of groupReferences(rule.targets)) addTo(this.rulesOfGroup, groupId, rule.id);
  }

  private removeRule(ruleId: string): void {
    this.unlinkRule(ruleId);
    this.rules.delete(ruleId);
  }

  private unlinkRule(ruleId: string): void {
    const before = this.rules.get(ruleId);
    if (!before) return;
    for (const directiveId of before.directives) this.rulesOfDirective.get(directiveId)?.delete(ruleId);
    for (const groupId of groupReferences(before.targets)) this.rulesOfGroup.get(groupId)?.delete(ruleId);
  }

  private setGroup(group: Group): void {
    this.groups.set(group.id, group);
    if (!this.members.has(group.id)) this.members.set(group.id, new Set());
  }

  private removeGroup(groupId: string, affected: Set<string>): void {
    const lendsProperties = givesProperties(this.groups.get(groupId));
    for (const nodeId of this.members.get(groupId) ?? []) {
      removeSorted(this.groupsOfNode.get(nodeId) as string[], groupId);
      if (lendsProperties) affected.add(nodeId);
    }
    this.members.delete(groupId);
    this.groups.delete(groupId);
  }

  private setRelay(relay: Relay): void {
    this.relays.set(relay.id, relay);
    this.policyServers.add(relay.id);
  }

  private removeNode(nodeId: string, removed: Set<string>): void {
    const node = this.nodes.get(nodeId);
    if (!node) return;
    this.values.nodeRemoved(node);
    for (const groupId of this.groupsOfNode.get(nodeId) ?? []) this.members.get(groupId)?.delete(nodeId);
    for (const ruleId of this.rulesOfNode.get(nodeId) ?? []) this.ruleTargets.get(ruleId)?.delete(nodeId);
    this.groupsOfNode.delete(nodeId);
    this.rulesOfNode.delete(nodeId);
    this.nodes.delete(nodeId);
    this.sortedNodeIds = undefined;
    removed.add(nodeId);
  }

  private adoptMemberships(memberships: NodeMemberships): void {
    const { groupsOfNode, rulesOfNode } = memberships;
    const gathered = memberships.members !== undefined && memberships.ruleTargets !== undefined;
    for (const groupId of this.groups.keys())
      this.members.set(groupId, memberships.members?.get(groupId) ?? new Set());
    for (const ruleId of this.rules.keys())
      this.ruleTargets.set(ruleId, memberships.ruleTargets?.get(ruleId) ?? new Set());
    if (gathered) {
      for (const groupId of memberships.members?.keys() ?? [])
        if (!this.groups.has(groupId)) throw new Error(`membership of an unknown group ${groupId} is handed`);
      for (const ruleId of memberships.ruleTargets?.keys() ?? [])
        if (!this.rules.has(ruleId)) throw new Error(`the targets of an unknown rule ${ruleId} are handed`);
    }
    for (const nodeId of this.nodes.keys()) {
      const groups = groupsOfNode.get(nodeId);
      const rules = rulesOfNode.get(nodeId);
      if (!groups || !rules) throw new Error(`the memberships handed to the index miss node ${nodeId}`);
      if (!gathered) {
        for (const groupId of groups) {
          const members = this.members.get(groupId);
          if (!members) throw new Error(`node ${nodeId} is handed membership of an unknown group ${groupId}`);
          members.add(nodeId);
        }
        for (const ruleId of rules) {
          const targets = this.ruleTargets.get(ruleId);
          if (!targets) throw new Error(`node ${nodeId} is handed an unknown rule ${ruleId}`);
          targets.add(nodeId);
        }
      }
      this.groupsOfNode.set(nodeId, [...groups]);
      this.rulesOfNode.set(nodeId, [...rules]);
    }
    for (const [ruleId, rule] of this.rules) {
      const disabledGroup = disabledGroupIn(rule.targets, this.groups);
      if (!rule.enabled) this.inactiveRules.set(ruleId, 'the rule is disabled');
      else if (disabledGroup)
        this.inactiveRules.set(ruleId, `its target names the disabled group ${disabledGroup}`);
    }
  }

  private refreshGroupStructure(): void {
    this.groupOrder = groupEvaluationOrder(this.groups);
    this.cycleFree = !hasGroupCycle(this.groups);
    this.ancestors = computeAncestors(this.groups);
    this.dependentGroups.clear();
    this.groupsReading.clear();
    for (const [groupId, group] of this.groups) {
      for (const reference of referencedGroups(group)) addTo(this.dependentGroups, reference, groupId);
      for (const criterion of criteriaList(group)) {
        if ('fact' in criterion) addTo(this.groupsReading, `f:${criterion.fact}`, groupId);
        else if ('property' in criterion) addTo(this.groupsReading, `p:${criterion.property}`, groupId);
      }
    }
  }

  /** The groups whose criteria read a fact or property path where two versions of a node differ. */
  private groupsReadingChanges(before: FleetNode, after: FleetNode): Set<string> {
    const groups = new Set<string>();
    const factsSame = before.facts === after.facts;
    const propertiesSame = before.properties === after.properties;
    for (const [key, readers] of this.groupsReading) {
      const fact = key.startsWith('f:');
      if (fact ? factsSame : propertiesSame) continue;
      const path = key.slice(2);
      const [was, is] = fact
        ? [valueAtPath(before.facts, path), valueAtPath(after.facts, path)]
        : [valueAtPath(before.properties, path), valueAtPath(after.properties, path)];
      if (!sameJson(was, is)) for (const groupId of readers) groups.add(groupId);
    }
    return groups;
  }

  private dependentClosure(groupIds: Iterable<string>): Set<string> {
    const closure = new Set<string>();
    const pending = [...groupIds];
    while (pending.length > 0) {
      const groupId = pending.pop() as string;
      if (closure.has(groupId)) continue;
      closure.add(groupId);
      pending.push(...(this.dependentGroups.get(groupId) ?? []));
    }
    return closure;
  }

  /** Replaces a group's members; true when they changed. Nodes it lends properties to are affected. */
  private updateMembers(groupId: string, next: Set<string>, affected: Set<string>): boolean {
    const previous = this.members.get(groupId) ?? new Set<string>();
    const lendsProperties = givesProperties(this.groups.get(groupId));
    let any = false;
    for (const nodeId of previous) {
      if (next.has(nodeId)) continue;
      removeSorted(this.groupsOfNode.get(nodeId) as string[], groupId);
      if (lendsProperties) affected.add(nodeId);
      any = true;
    }
    for (const nodeId of next) {
      if (previous.has(nodeId)) continue;
      insertSorted(this.groupsOfNode.get(nodeId) as string[], groupId);
      if (lendsProperties) affected.add(nodeId);
      any = true;
    }
    this.members.set(groupId, next);
    return any;
  }

  /** Re-evaluates a rule's targets whole; nodes that gain or lose it go to `affected`. */
  private setRuleTargets(ruleId: string, affected?: Set<string>): void {
    const rule = this.rules.get(ruleId);
    const previous = this.ruleTargets.get(ruleId) ?? new Set<string>();
    let next = new Set<string>();
    this.inactiveRules.delete(ruleId);
    if (rule) {
      const disabledGroup = disabledGroupIn(rule.targets, this.groups);
      if (!rule.enabled) this.inactiveRules.set(ruleId, 'the rule is disabled');
      else if (disabledGroup)
        this.inactiveRules.set(ruleId, `its target names the disabled group ${disabledGroup}`);
      else next = evaluateTarget(rule.targets, this.targetContext);
    }
    for (const nodeId of previous) {
      if (next.has(nodeId)) continue;
      const list = this.rulesOfNode.get(nodeId);
      if (list) removeSorted(list, ruleId);
      affected?.add(nodeId);
    }
    for (const nodeId of next) {
      if (previous.has(nodeId)) continue;
      insertSorted(this.rulesOfNode.get(nodeId) as string[], ruleId);
      affected?.add(nodeId);
    }
    if (rule) this.ruleTargets.set(ruleId, next);
    else this.ruleTargets.delete(ruleId);
  }
}

function relationshipsByDirective(relationships: readonly Relationship[]): Map<string, Relationship[]> {
  const result = new Map<string, Relationship[]>();
  for (const relationship of relationships) {
    for (const end of new Set([relationship.from, relationship.to])) {
      result.set(end, [...(result.get(end) ?? []), relationship]);
    }
  }
  return result;
}

function addTo(map: Map<string, Set<string>>, key: string, value: string): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
}

/** A group whose membership shows in its members' bundles through its properties. */
function sameJson(a: Json | undefined, b: Json | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || typeof a !== 'object' || typeof b !== 'object') return false;
  return canonicalJson(a) === canonicalJson(b);
}

function givesProperties(group: Group | undefined): boolean {
  return group !== undefined && group.enabled && Object.keys(group.properties).length > 0;
}

function sameSet(a: ReadonlySet<string> | undefined, b: ReadonlySet<string>): boolean {
  if (!a) return b.size === 0;
  if (a.size !== b.size) return false;
  for (const item of a) if (!b.has(item)) return false;
  return true;
}

/** Whether two versions of a directive differ in their parameter values only. */
function onlyValuesDiffer(before: Directive, after: Directive): boolean {
  const relations = (directive: Directive): string =>
    mapList([directive.before, directive.require, directive.notify, directive.subscribe], (ids) =>
      ids.join(' '),
    ).join('|');
  return (
    before.name === after.name &&
    before.technique === after.technique &&
    before.techniqueVersion === after.techniqueVersion &&
    before.priority === after.priority &&
    before.enabled === after.enabled &&
    relations(before) === relations(after)
  );
}

/** Whether two versions of a node differ in what its bundle shows (facts only decide memberships). */
function outputFieldsDiffer(before: FleetNode, after: FleetNode): boolean {
  return (
    before.hostname !== after.hostname ||
    before.policyServer !== after.policyServer ||
    before.state !== after.state ||
    before.policyMode !== after.policyMode ||
    canonicalJson(before.properties) !== canonicalJson(after.properties) ||
    canonicalJson(before.inheritModes ?? {}) !== canonicalJson(after.inheritModes ?? {})
  );
}
