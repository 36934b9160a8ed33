import { ChromiumNotFoundError, findChromium } from './chromium';

describe('findChromium', () => {
  const only =
    (...paths: string[]) =>
    (path: string): boolean =>
      paths.includes(path);

  it('takes the chromium found on PATH, in PATH order', () => {
    const env = { PATH: '/opt/a:/opt/b:/usr/bin' };
    expect(findChromium({ env, isExecutable: only('/opt/b/chromium', '/usr/bin/chromium') })).toBe(
      '/opt/b/chromium',
    );
  });

  it("falls back to Debian's /usr/bin/chromium", () => {
    expect(findChromium({ env: { PATH: '/opt/a' }, isExecutable: only('/usr/bin/chromium') })).toBe(
      '/usr/bin/chromium',
    );
  });

  it('prefers CHROMIUM_PATH, and refuses one that is not there', () => {
    const env = { PATH: '/usr/bin', CHROMIUM_PATH: '/opt/chrome/chrome' };
    expect(findChromium({ env, isExecutable: only('/opt/chrome/chrome', '/usr/bin/chromium') })).toBe(
      '/opt/chrome/chrome',
    );
    expect(() => findChromium({ env, isExecutable: only('/usr/bin/chromium') })).toThrow(
      ChromiumNotFoundError,
    );
  });

  it('throws an error that says how to install it when there is none', () => {
    expect(() => findChromium({ env: { PATH: '/opt/a' }, isExecutable: () => false })).toThrow(
      /Chromium was not found.*apt-get install chromium/s,
    );
  });
});
