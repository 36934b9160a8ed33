type Schema = Readonly<Record<string, unknown>>;

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/**
 * What a schema change breaks for the consumers of a `.v1` topic, compared with the schema first
 * published: a field removed, a type or constant changed, an allowed value dropped, a field newly
 * required, a branch of a union removed. Adding optional fields, allowed values or union branches
 * breaks nothing. Each problem names its JSON path.
 */
export function breakingChanges(baseline: unknown, current: unknown, path = '$'): string[] {
  if (!isSchema(baseline)) return [];
  if (!isSchema(current)) return [`${path}: the schema is gone`];
  const problems: string[] = [];
  for (const keyword of ['type', 'const', 'format', 'pattern'] as const)
    if (
      baseline[keyword] !== undefined &&
      JSON.stringify(baseline[keyword]) !== JSON.stringify(current[keyword])
    )
      problems.push(
        `${path}: ${keyword} ${JSON.stringify(baseline[keyword])} became ${JSON.stringify(current[keyword])}`,
      );
  if (baseline['enum'] !== undefined) {
    const allowed = new Set(list(current['enum']).map((value) => JSON.stringify(value)));
    for (const value of list(baseline['enum']))
      if (!allowed.has(JSON.stringify(value)))
        problems.push(`${path}: the value ${JSON.stringify(value)} is no longer allowed`);
  }
  const before = isSchema(baseline['properties']) ? baseline['properties'] : {};
  const after = isSchema(current['properties']) ? current['properties'] : {};
  for (const [name, schema] of Object.entries(before)) {
    if (!(name in after)) problems.push(`${path}.${name}: removed`);
    else problems.push(...breakingChanges(schema, after[name], `${path}.${name}`));
  }
  const required = new Set(list(baseline['required']));
  for (const name of list(current['required']))
    if (!required.has(name)) problems.push(`${path}.${String(name)}: newly required`);
  if (baseline['items'] !== undefined)
    problems.push(...breakingChanges(baseline['items'], current['items'], `${path}[]`));
  if (baseline['additionalProperties'] !== undefined && isSchema(baseline['additionalProperties']))
    problems.push(
      ...breakingChanges(baseline['additionalProperties'], current['additionalProperties'], `${path}.*`),
    );
  for (const keyword of ['oneOf', 'anyOf', 'allOf'] as const) {
    const branches = list(current[keyword]);
    list(baseline[keyword]).forEach((branch, index) => {
      if (index >= branches.length) problems.push(`${path}.${keyword}[${index}]: removed`);
      else problems.push(...breakingChanges(branch, branches[index], `${path}.${keyword}[${index}]`));
    });
  }
  return problems;
}
