import { createParamDecorator } from '@nestjs/common';
import type { ExecutionContext } from '@nestjs/common';
import { hasControlCharacter } from '@policygen/engine';
import { validationFailed } from './api-errors';

/** The header that says why a write is made; it is recorded with the revision. */
export const REASON_HEADER = 'X-Policygen-Reason';
/** The longest reason recorded, in characters. */
export const MAX_REASON_CHARACTERS = 1_000;
/** RFC 8187's prefix for a header value in UTF-8, percent-encoded: the way to send a non-ASCII reason. */
const UTF8_EXTENDED_VALUE = "UTF-8''";

/**
 * A reason as recorded: null when absent or blank; refused (400 naming `source`, the header or the
 * body field) when it is not a string, is longer than the limit, or holds a control character.
 */
export function checkedReason(value: unknown, source: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw refusal(source, 'must be a string');
  if (value.trim() === '') return null;
  const characters = [...value].length;
  if (characters > MAX_REASON_CHARACTERS)
    throw refusal(
      source,
      `is ${characters} characters long, more than the limit of ${MAX_REASON_CHARACTERS}`,
    );
  if (hasControlCharacter(value))
    throw refusal(source, 'must not contain control characters (U+0000–U+001F, U+007F)');
  return value;
}

/** The reason an `X-Policygen-Reason` header gives: as is, or RFC 8187 `UTF-8''<percent-encoded>`. */
export function reasonOfHeader(header: string | string[] | undefined): string | null {
  if (Array.isArray(header)) throw refusal(REASON_HEADER, 'must be given once');
  if (header === undefined || !header.startsWith(UTF8_EXTENDED_VALUE))
    return checkedReason(header, REASON_HEADER);
  let decoded: string;
  try {
    decoded = decodeURIComponent(header.slice(UTF8_EXTENDED_VALUE.length));
  } catch {
    throw refusal(REASON_HEADER, `must be percent-encoded UTF-8 after ${UTF8_EXTENDED_VALUE}`);
  }
  return checkedReason(decoded, REASON_HEADER);
}

function refusal(source: string, message: string): Error {
  return validationFailed([{ path: source, message }], `the reason (${source})`);
}

/** The request's reason header, checked (see `reasonOfHeader`), as a handler parameter. */
export const Reason = createParamDecorator((_data: unknown, context: ExecutionContext): string | null =>
  reasonOfHeader(
    context.switchToHttp().getRequest<{ headers: Record<string, string | string[] | undefined> }>().headers[
      REASON_HEADER.toLowerCase()
    ],
  ),
);
