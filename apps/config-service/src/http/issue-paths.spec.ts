import { jsonPath, rebaseIssues } from './issue-paths';

describe('issue paths', () => {
  it('writes paths the way the validator does', () => {
    expect(jsonPath()).toBe('$');
    expect(jsonPath('upsert', 'directives', 0, 'name')).toBe('$.upsert.directives[0].name');
    expect(jsonPath('upsert', 'parameters', '1st', 'odd key')).toBe('$.upsert.parameters["1st"]["odd key"]');
  });

  it('moves the paths under a prefix, and only those', () => {
    const issues = [
      { path: '$.upsert.nodes[0]', message: 'a' },
      { path: '$.upsert.nodes[0].facts.os', message: 'b' },
      { path: '$.upsert.nodes[0][1]', message: 'c' },
      { path: '$.upsert.nodes[01]', message: 'd' },
      { path: '$.upsert.nodes[10].id', message: 'e' },
    ];
    expect(rebaseIssues(issues, '$.upsert.nodes[0]', '$').map((issue) => issue.path)).toEqual([
      '$',
      '$.facts.os',
      '$[1]',
      '$.upsert.nodes[01]',
      '$.upsert.nodes[10].id',
    ]);
  });
});
