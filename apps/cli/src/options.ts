import { InvalidArgumentError, Option } from 'commander';
import { ORDERING_MODES } from '@policygen/engine';
import type { GenerateOptions, OrderingMode } from '@policygen/engine';

export function fleetOption(): Option {
  return new Option('-f, --fleet <file>', 'the fleet file (.json, .yaml or .yml)').makeOptionMandatory();
}

export function orderingOption(): Option {
  return new Option('--ordering <mode>', 'override the ordering of every node').choices(ORDERING_MODES);
}

export function nodeOption(): Option {
  return new Option('-n, --node <id>', 'the node').makeOptionMandatory();
}

export function parseRevision(value: string): number {
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new InvalidArgumentError('must be a non-negative integer');
  }
  return Number(value);
}

export function collect(value: string, previous: readonly string[]): string[] {
  return [...previous, value];
}

/** Engine options, leaving out what the user did not give. */
export function generateOptions(values: {
  readonly ordering?: OrderingMode | undefined;
  readonly revision?: number | undefined;
  readonly generatedAt?: number | undefined;
}): GenerateOptions {
  return {
    ...(values.ordering !== undefined ? { ordering: values.ordering } : {}),
    ...(values.revision !== undefined ? { revision: values.revision } : {}),
    ...(values.generatedAt !== undefined ? { generatedAt: values.generatedAt } : {}),
  };
}
