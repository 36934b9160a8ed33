import type { Pack } from 'tar-stream';

/**
 * Adds a file to a tar being streamed to a reader. A reader that goes away (a relay or node killed
 * mid-download) destroys the archive, and with it every entry still pending, each of which then
 * emits an error: no error of this process, which must not crash for it (it did: an unhandled
 * 'error' event). The reader learns from its cut stream.
 */
export function addTarEntry(archive: Pack, header: Parameters<Pack['entry']>[0], content: Buffer): void {
  archive.entry(header, content).on('error', () => undefined);
}
