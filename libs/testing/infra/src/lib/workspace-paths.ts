import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { register } from 'tsconfig-paths';
import { workspaceRoot } from './system';

let registered = false;

/** Makes `@policygen/*` imports resolvable for code that Node's resolver loads directly. */
export function registerWorkspacePaths(): void {
  if (registered) return;
  const root = workspaceRoot();
  const tsconfig = JSON.parse(readFileSync(join(root, 'tsconfig.base.json'), 'utf8')) as {
    compilerOptions: { paths: Record<string, string[]> };
  };
  register({ baseUrl: root, paths: tsconfig.compilerOptions.paths, addMatchAll: false });
  registered = true;
}
