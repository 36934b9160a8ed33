const STORAGE_KEY = 'policygen.dashboard.token';

/**
 * The bearer token the dashboard sends, if any: `?token=` in the page's URL (remembered in
 * localStorage, and taken out of the address bar so it is not shared with a copied link), else
 * the one remembered before.
 */
export function resolveToken(location: Location, history: History, storage: Storage | null): string | null {
  const url = new URL(location.href);
  const fromQuery = url.searchParams.get('token');
  if (fromQuery !== null) {
    url.searchParams.delete('token');
    history.replaceState(history.state, '', url.toString());
    const token = fromQuery.trim();
    try {
      if (token === '') storage?.removeItem(STORAGE_KEY);
      else storage?.setItem(STORAGE_KEY, token);
    } catch {
      // Storage can be unavailable (private mode, quota); the token still serves this page.
    }
    return token === '' ? null : token;
  }
  try {
    const stored = storage?.getItem(STORAGE_KEY) ?? null;
    return stored === null || stored === '' ? null : stored;
  } catch {
    return null;
  }
}
