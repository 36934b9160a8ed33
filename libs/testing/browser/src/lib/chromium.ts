import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { Browser, LaunchOptions } from 'playwright-core';
import { chromium } from 'playwright-core';

/** The environment variable naming a Chromium binary, ahead of the one on PATH. */
export const CHROMIUM_PATH_ENV = 'CHROMIUM_PATH';
const DEBIAN_CHROMIUM = '/usr/bin/chromium';

export class ChromiumNotFoundError extends Error {
  constructor(looked: readonly string[]) {
    super(
      `Chromium was not found (looked at: ${looked.join('; ')}). Browser tests use the system's ` +
        'Chromium and never download one, nor skip: install it with `npm run setup:system` ' +
        `(Debian: \`apt-get install chromium\`), or name a binary in ${CHROMIUM_PATH_ENV}.`,
    );
    this.name = 'ChromiumNotFoundError';
  }
}

export interface ChromiumSearch {
  env?: Readonly<Record<string, string | undefined>>;
  /** Whether a path is an executable file (tests replace it). */
  isExecutable?: (path: string) => boolean;
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The Chromium binary to drive: `$CHROMIUM_PATH` if set (it must exist), else `chromium` on PATH
 * (what `which chromium` answers), else Debian's `/usr/bin/chromium`.
 * @throws ChromiumNotFoundError when there is none.
 */
export function findChromium({ env = process.env, isExecutable = executable }: ChromiumSearch = {}): string {
  const named = env[CHROMIUM_PATH_ENV];
  if (named !== undefined && named !== '') {
    if (isExecutable(named)) return named;
    throw new ChromiumNotFoundError([`${CHROMIUM_PATH_ENV}=${named} (not an executable file)`]);
  }
  const onPath = (env['PATH'] ?? '')
    .split(delimiter)
    .filter((directory) => directory !== '')
    .map((directory) => join(directory, 'chromium'));
  const found = [...onPath, DEBIAN_CHROMIUM].find((candidate) => isExecutable(candidate));
  if (found !== undefined) return found;
  throw new ChromiumNotFoundError(['`chromium` on PATH', DEBIAN_CHROMIUM]);
}

/**
 * Launches the system's Chromium, headless, through playwright-core (which never downloads a
 * browser). `--no-sandbox`: test machines and containers often run as root, where Chromium's
 * sandbox cannot start; `--disable-dev-shm-usage`: a container's small /dev/shm crashes pages.
 */
export async function launchChromium(options: Omit<LaunchOptions, 'executablePath'> = {}): Promise<Browser> {
  const executablePath = findChromium();
  return chromium.launch({
    headless: true,
    ...options,
    executablePath,
    args: ['--no-sandbox', '--disable-dev-shm-usage', ...(options.args ?? [])],
  });
}
