export type {
  CriteriaInput,
  CriterionInput,
  DirectiveInput,
  FleetFile,
  GroupInput,
  NodeInput,
  RelationshipInput,
  RelayInput,
  RuleInput,
  TechniqueInput,
} from '@policygen/engine';
